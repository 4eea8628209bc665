#!/usr/bin/env bash
# Runs the whole test suite: formatting, unit tests, and the integration tests that start a
# real driver and worker processes on 127.0.0.1. Usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "scripts/test.sh: cargo is not installed; install Rust (https://rustup.rs) and retry" >&2
    exit 1
fi

echo "== formatting"
cargo fmt --all -- --check

echo "== build (release: the integration tests run the engine at benchmark speed)"
cargo build --release --workspace --all-targets

echo "== Kafka broker for the tests (127.0.0.1:19092; jars fetched once with Maven)"
kafka_dir="target/kafka-test-19092"
scripts/kafka.sh start --port 19092 --dir "$kafka_dir"
trap 'scripts/kafka.sh stop --port 19092 --dir "$kafka_dir"' EXIT
export SLEET_KAFKA_BROKERS=127.0.0.1:19092

echo "== tests"
# Integration tests each start their own cluster; two at a time keeps a 2-core machine honest.
cargo test --release --workspace -- --test-threads=2 "$@"
