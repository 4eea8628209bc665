#!/usr/bin/env bash
# Builds sleet and runs the demo: a driver and 2 workers on 127.0.0.1 running the Yahoo
# Streaming Benchmark. Ctrl-C stops every process. Extra arguments go to `sleet demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p sleet-cli
exec "${CARGO_TARGET_DIR:-target}/release/sleet" demo "$@"
