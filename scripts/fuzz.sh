#!/usr/bin/env bash
# Builds and runs the fuzz targets in fuzz/ (cargo-fuzz, nightly). See --help.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<'EOF'
Usage: scripts/fuzz.sh [--runs N | --seconds S] [--smoke] [--timeout S] [--sanitizer address|none] [TARGET...]

Builds the fuzz targets of fuzz/ with cargo-fuzz on the nightly toolchain (installing either
if missing) and runs each TARGET (default: all of them) in turn, starting from its saved corpus (fuzz/corpus/TARGET, not in
git) and its seeds (fuzz/seeds/TARGET). Prints, per target, the inputs executed and the
result; exits non-zero if any target crashed, panicked, hung (-timeout=10 s per input, see
--timeout), went past 2 GiB resident (-rss_limit_mb=2048) or asked for more than 512 MiB in one
allocation (fuzz/src/lib.rs aborts on it in every build; -malloc_limit_mb=512 under ASan).
Inputs that fail are written to fuzz/artifacts/TARGET/; replay one with
    fuzz/target/<triple>/release/TARGET fuzz/artifacts/TARGET/crash-...
(.../debug/TARGET after --smoke; under $CARGO_TARGET_DIR when it is set).

  --runs N          run each target for N inputs (libFuzzer -runs=N)
  --seconds S       run each target for S seconds (-max_total_time=S); the default is 60
  --smoke           what CI runs: builds unoptimised (cargo-fuzz --dev: the dev profile,
                    debug assertions and overflow checks on, libFuzzer's coverage kept)
                    without a sanitizer, the
                    quickest build (about a third of the CPU time of an optimised one, for
                    some 15-70 times fewer inputs a second), and runs each target for 5 seconds
                    unless --runs/--seconds say otherwise; long campaigns want the default
                    (optimised, ASan) build
  --timeout S       seconds one input may take before it counts as a hang (default 10). The
                    clock is the wall's: under `nice` on a busy machine a fuzzer can be
                    starved for minutes, so give such runs more and replay what times out
  --sanitizer S     address (the default, catches memory errors in the C code under lz4)
                    or none
  -h, --help        this text

Targets: json_decode avro_decode avro_batch frame_decode block_codec_roundtrip
         kafka_record_batches kafka_responses job_file sql_script

Run it under `nice -n 19` on a machine doing other work; CARGO_TARGET_DIR is honoured.
EOF
}

all_targets=(json_decode avro_decode avro_batch frame_decode block_codec_roundtrip kafka_record_batches kafka_responses job_file sql_script)
runs=""
seconds=""
smoke=false
timeout=10
sanitizer="address"
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="${2:?--runs needs a count}"; shift 2 ;;
        --seconds) seconds="${2:?--seconds needs a count}"; shift 2 ;;
        --smoke) smoke=true; shift ;;
        --timeout) timeout="${2:?--timeout needs seconds}"; shift 2 ;;
        --sanitizer) sanitizer="${2:?--sanitizer needs a name}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "scripts/fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if [ -n "$runs" ] && [ -n "$seconds" ]; then
    echo "scripts/fuzz.sh: give --runs or --seconds, not both" >&2
    exit 2
fi
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for target in "${targets[@]}"; do
    if [ ! -f "fuzz/fuzz_targets/$target.rs" ]; then
        echo "scripts/fuzz.sh: no fuzz target $target (targets: ${all_targets[*]})" >&2
        exit 2
    fi
done

build_flags=(--sanitizer "$sanitizer")
profile=release
if $smoke; then
    [ -n "$runs$seconds" ] || seconds=5
    # A smoke run checks that every target builds and survives its seeds for a few seconds;
    # an unoptimised build does that for about a third of an optimised one's compile time
    # (measured: docs/experiments/2026-11-27-comment-figures.md, "CI's fuzz smoke").
    build_flags=(--dev --sanitizer none)
    profile=debug
fi
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "== installing the nightly toolchain (cargo-fuzz needs it)"
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
[ -n "$runs$seconds" ] || seconds=60

echo "== building the fuzz targets (nightly, ${build_flags[*]})"
started=$(date +%s)
# Every target at once: they share their dependencies, and building one by name would
# build the package again for each.
if ! (cd fuzz && cargo +nightly fuzz build "${build_flags[@]}") >fuzz/build.log 2>&1; then
    grep -v '^\s*Compiling' fuzz/build.log >&2
    echo "scripts/fuzz.sh: building the fuzz targets failed (fuzz/build.log)" >&2
    exit 1
fi
echo "   built in $(( $(date +%s) - started )) s"

triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
bin_dir="${CARGO_TARGET_DIR:-fuzz/target}/$triple/$profile"
limits=(-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout="$timeout" -print_final_stats=1)
if [ -n "$runs" ]; then
    budget=(-runs="$runs")
else
    budget=(-max_total_time="$seconds")
fi

failed=0
summary=()
for target in "${targets[@]}"; do
    corpus="fuzz/corpus/$target"
    artifacts="fuzz/artifacts/$target"
    log="fuzz/artifacts/$target.log"
    mkdir -p "$corpus" "$artifacts"
    seeds=()
    [ -d "fuzz/seeds/$target" ] && seeds=("fuzz/seeds/$target")
    # The example and Nexmark scripts are the SQL target's seeds: kept once, where users read them.
    [ "$target" = sql_script ] && seeds+=("examples" "benchmarks/nexmark")
    echo "== $target (${budget[*]})"
    target_started=$(date +%s)
    status=0
    "$bin_dir/$target" "$corpus" "${seeds[@]}" "${budget[@]}" "${limits[@]}" \
        -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
    executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    elapsed=$(( $(date +%s) - target_started ))
    if [ "$status" -eq 0 ]; then
        result="ok"
    else
        failed=1
        found=$(grep -o "Test unit written to .*" "$log" | tail -1 | sed 's/Test unit written to //')
        kind=$(grep -oE "deadly signal|panicked at [^ ]*|out-of-memory|timeout|AddressSanitizer: [a-z-]*|leak" "$log" | head -1)
        result="FAILED (${kind:-exit $status}) ${found:+input: $found} log: $log"
        grep -E "panicked at|ERROR: |SUMMARY" "$log" | head -5 | sed 's/^/   /'
    fi
    line=$(printf '%-24s %12s inputs %6s s  %s' "$target" "${executed:-?}" "$elapsed" "$result")
    echo "   $line"
    summary+=("$line")
done

echo "== summary"
printf '   %s\n' "${summary[@]}"
exit "$failed"
