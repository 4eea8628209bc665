#!/usr/bin/env bash
# Runs the whole test suite: formatting, lints, unit tests, doc tests, and the integration tests
# that start a real driver and worker processes on 127.0.0.1. Usage: scripts/test.sh [extra cargo test args]
#
# SLEET_TOOLCHAIN=<rustup toolchain> builds and tests with that toolchain instead of the default
# one; .ci/run sets it to the `rust-version` in Cargo.toml, so CI proves the declared minimum
# Rust version with the suite's own build instead of a second build and test run. Formatting and
# clippy stay on the default toolchain (stable on CI): their verdicts change between releases,
# and the newest clippy is the one worth listening to. A per-command `+toolchain` is used rather
# than exporting RUSTUP_TOOLCHAIN so that without the variable the script needs no rustup and no
# toolchain named "stable", just whatever `cargo` is on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "scripts/test.sh: cargo is not installed; install Rust (https://rustup.rs) and retry" >&2
    exit 1
fi
build_cargo=(cargo)
if [ -n "${SLEET_TOOLCHAIN:-}" ]; then
    build_cargo=(cargo "+$SLEET_TOOLCHAIN")
    # Toolchains before 1.90 link with the system's GNU ld, where later ones use the LLVM
    # linker by default on x86_64 Linux, the quicker of the two on ~30 large release binaries;
    # each toolchain ships it, behind a `cc -fuse-ld=lld` shim. Only here: without the
    # variable the build, and so the demo's, stays cargo's own.
    gcc_ld="$(rustc "+$SLEET_TOOLCHAIN" --print sysroot)/lib/rustlib/$(rustc "+$SLEET_TOOLCHAIN" -vV | sed -n 's/^host: //p')/bin/gcc-ld"
    if [ -x "$gcc_ld/ld.lld" ]; then
        build_cargo=(env "RUSTFLAGS=${RUSTFLAGS:-} -C link-arg=-B$gcc_ld -C link-arg=-fuse-ld=lld" "${build_cargo[@]}")
    fi
fi

echo "== formatting"
cargo fmt --all -- --check

echo "== the product binary links no benchmark code (cargo tree -p sleet-cli -e normal)"
# sleet-bench (crates/bench) depends on sleet-cli, never the other way; plotting is the
# harness's alone. A hit here means the product would ship the harness again.
if harness=$(cargo tree -p sleet-cli -e normal --prefix none --locked | grep -iE '^(plotters|sleet-bench) '); then
    echo "scripts/test.sh: the sleet binary's dependencies include benchmark-only crates:" >&2
    echo "$harness" | sort -u >&2
    exit 1
fi

echo "== lints ($(cargo clippy --version))"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== build with $("${build_cargo[@]}" --version) (release: the integration tests run the engine at benchmark speed)"
# What the tests below run, and no more: every release binary is a whole-program link with
# thin LTO, and the examples and criterion benches (clippy has checked them) run in no test.
"${build_cargo[@]}" build --release --workspace --lib --bins --tests --locked

echo "== Kafka broker for the tests (127.0.0.1:19092; jars fetched once with Maven)"
kafka_dir="target/kafka-test-19092"
scripts/kafka.sh start --port 19092 --dir "$kafka_dir"
trap 'scripts/kafka.sh stop --port 19092 --dir "$kafka_dir"' EXIT
export SLEET_KAFKA_BROKERS=127.0.0.1:19092

echo "== Chromium for the dashboard's browser test (Debian's package, installed once)"
SLEET_CHROMIUM="$(scripts/chromium.sh ensure)"
export SLEET_CHROMIUM

echo "== tests (unit, integration, and the library crates' doc tests)"
# Integration tests each start their own cluster; two at a time keeps a 2-core machine honest.
# Targets named rather than cargo's default set, which would also build the examples.
"${build_cargo[@]}" test --release --workspace --locked --lib --bins --tests -- --test-threads=2 "$@"
"${build_cargo[@]}" test --release --workspace --locked --doc -- "$@"
