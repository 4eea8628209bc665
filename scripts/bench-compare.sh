#!/usr/bin/env bash
# Runs one benchmark on two commits side by side and prints, for every figure of its JSON
# result, both medians, their ratio and the samples behind them.
#
# Usage: scripts/bench-compare.sh [--runs N] [--figure REGEX]... [--out DIR] BASE [HEAD] -- BENCH ARGS...
#
#   BASE, HEAD   commits (any git revision); HEAD defaults to HEAD. `.` stands for the
#                working tree as it is, uncommitted changes included.
#   BENCH ARGS   the benchmark and its flags as `sleet-bench` takes them, e.g.
#                `sched --workers 16 --group-size 100`. The script adds `--json`. A commit
#                from before crates/bench runs them as `sleet bench …`.
#   --runs N     pairs of runs (default 3). Pair i runs BASE then HEAD when i is odd and HEAD
#                then BASE when it is even, so that neither binary always runs second on a
#                machine that warms up or slows down over time.
#   --figure RE  report only the figures whose path matches RE (Python regex; repeatable).
#                Without it, every numeric figure that is not a constant of the run.
#   --out DIR    keep the runs' results and logs here (default target/bench-compare/runs-<time>).
#
# Each commit is built once into a target directory of its own under target/bench-compare/
# (seeded from an earlier one so that dependencies need not be rebuilt) and kept for the next
# comparison; the working tree is rebuilt every time. Both binaries run on the same machine
# within minutes of each other, which is the only way a ratio means something on a shared host.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

runs=3
out=""
figures=()
revisions=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
        --runs=*) runs="${1#--runs=}"; shift ;;
        --figure) figures+=("${2:?--figure needs a regex}"); shift 2 ;;
        --figure=*) figures+=("${1#--figure=}"); shift ;;
        --out) out="${2:?--out needs a directory}"; shift 2 ;;
        --out=*) out="${1#--out=}"; shift ;;
        -h|--help) usage 0 ;;
        --) shift; break ;;
        -*) echo "bench-compare: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) revisions+=("$1"); shift ;;
    esac
done
bench_args=("$@")

if [ ${#revisions[@]} -lt 1 ] || [ ${#revisions[@]} -gt 2 ]; then
    echo "bench-compare: give BASE and optionally HEAD before '--' (see --help)" >&2
    exit 2
fi
if [ ${#bench_args[@]} -eq 0 ]; then
    echo "bench-compare: give the benchmark and its flags after '--', e.g. -- sched --workers 16" >&2
    exit 2
fi
case "$runs" in
    ''|*[!0-9]*|0) echo "bench-compare: --runs must be a positive whole number, not '$runs'" >&2; exit 2 ;;
esac
for arg in "${bench_args[@]}"; do
    case "$arg" in
        --json|--json=*) echo "bench-compare: leave out --json; the script chooses where each run writes" >&2; exit 2 ;;
    esac
done

root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
cache="$root/target/bench-compare"
mkdir -p "$cache"
base_rev="${revisions[0]}"
head_rev="${revisions[1]:-HEAD}"

# Resolves a revision to a commit id, or `worktree` for `.`.
resolve() {
    if [ "$1" = "." ]; then
        echo worktree
    else
        git -C "$root" rev-parse --verify --quiet "$1^{commit}" || {
            echo "bench-compare: '$1' is not a commit in $root" >&2
            exit 2
        }
    fi
}

# Builds a revision's binaries and prints the command that runs its benchmarks.
build() {
    local id="$1" src target
    if [ "$id" = worktree ]; then
        src="$root"
    else
        src="$cache/src-$id"
        if [ ! -f "$src/Cargo.toml" ]; then
            rm -rf "$src"
            mkdir -p "$src"
            # -m: the files get the time of extraction, not of the commit, so that cargo sees
            # them as newer than anything in a seeded target directory and rebuilds them.
            git -C "$root" archive "$id" | tar -x -m -C "$src"
        fi
    fi
    target="$cache/target-$id"
    if [ ! -d "$target" ]; then
        # Dependencies compiled for another commit are valid here too when their versions
        # match; copying them saves most of a clean release build.
        local seed
        # Directories only: each target directory has a build log beside it.
        seed="$(ls -dt "$cache"/target-*/ 2>/dev/null | head -n 1 || true)"
        seed="${seed%/}"
        if [ -n "$seed" ]; then
            echo "bench-compare: seeding $target from $seed" >&2
            cp -a "$seed" "$target"
        fi
    fi
    echo "bench-compare: building ${id:0:12} (target $target)" >&2
    (cd "$src" && CARGO_TARGET_DIR="$target" cargo build --release --bins >"$target.build.log" 2>&1) || {
        echo "bench-compare: building ${id:0:12} failed; see $target.build.log" >&2
        tail -n 20 "$target.build.log" >&2
        exit 1
    }
    echo "$target/release"
}

# The command that runs a build's benchmarks: the benchmarks moved to a binary of their own
# (sleet-bench, crates/bench); before that they were `sleet bench`. Decided by the revision's
# source, not by the target directory: one seeded from a newer build holds a stale sleet-bench.
bench_command() {
    local id="$1" bin="$2" src="$root"
    [ "$id" = worktree ] || src="$cache/src-$id"
    if [ -f "$src/crates/bench/Cargo.toml" ]; then
        echo "$bin/sleet-bench"
    else
        echo "$bin/sleet"
        echo bench
    fi
}

base_id="$(resolve "$base_rev")"
head_id="$(resolve "$head_rev")"
base_bin="$(build "$base_id")"
head_bin="$(build "$head_id")"
mapfile -t base_cmd < <(bench_command "$base_id" "$base_bin")
mapfile -t head_cmd < <(bench_command "$head_id" "$head_bin")

# The 1, 5 and 15 minute load averages, read once per use.
load_averages() {
    cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown
}

out="${out:-$cache/runs-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
{
    echo "base: $base_rev ($base_id)"
    echo "head: $head_rev ($head_id)"
    echo "benchmark: ${bench_args[*]}"
    echo "pairs: $runs"
    echo "load average at start: $(load_averages)"
} >"$out/about.txt"
# A busy machine distorts what these benchmarks measure (wake-up latency above all) for both
# binaries, but not by the same amount: say so rather than let a ratio pass for quiet.
load="$(sed -n 's/^load average at start: \([0-9.]*\).*/\1/p' "$out/about.txt")"
if awk -v load="${load:-0}" 'BEGIN { exit !(load > 0.5) }'; then
    echo "bench-compare: warning: load average $load before the runs; other work on this machine skews the ratio" >&2
fi

run_one() {
    local side="$1" pair="$2" started rc=0
    shift 2
    local result="$out/$side-$pair.json"
    started=$(date +%s)
    echo "bench-compare: pair $pair/$runs: $side" >&2
    "$@" "${bench_args[@]}" --json "$result" >"$out/$side-$pair.log" 2>&1 || rc=$?
    if [ ! -s "$result" ]; then
        echo "bench-compare: the $side run of pair $pair wrote no result (exit $rc); see $out/$side-$pair.log" >&2
        tail -n 20 "$out/$side-$pair.log" >&2
        exit 1
    fi
    if [ "$rc" -ne 0 ]; then
        # A benchmark exits non-zero when its run was incomplete or incorrect; its figures
        # still count as measured, but the report says so.
        echo "exit $rc" >"$out/$side-$pair.failed"
    fi
    echo "bench-compare: pair $pair/$runs: $side done in $(($(date +%s) - started)) s" >&2
}

for pair in $(seq 1 "$runs"); do
    if [ $((pair % 2)) -eq 1 ]; then
        run_one base "$pair" "${base_cmd[@]}"
        run_one head "$pair" "${head_cmd[@]}"
    else
        run_one head "$pair" "${head_cmd[@]}"
        run_one base "$pair" "${base_cmd[@]}"
    fi
done

echo "load average at end: $(load_averages)" >>"$out/about.txt"

figure_args=()
for figure in "${figures[@]+"${figures[@]}"}"; do
    figure_args+=(--figure "$figure")
done
python3 "$root/scripts/bench_compare_report.py" "$out" "${figure_args[@]+"${figure_args[@]}"}"
