#!/usr/bin/env bash
# Builds sleet and runs the demo: a driver and 2 workers on 127.0.0.1 running the Yahoo
# Streaming Benchmark. Ctrl-C stops every process. Extra arguments go to `sleet demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The same build as scripts/test.sh's, tests included: cargo resolves features per build
# command, so `-p sleet-cli` alone compiled the workspace a second time after the tests (and
# the tests a second time after the demo), where this way either finds the other's.
cargo build --release --workspace --lib --bins --tests --locked
exec "${CARGO_TARGET_DIR:-target}/release/sleet" demo "$@"
