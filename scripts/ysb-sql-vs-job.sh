#!/usr/bin/env bash
# Runs the ysb job two ways side by side: as `sleet job ysb` prints it and as examples/ysb.sql
# compiles, alternating, each on a fresh local driver and two one-core workers, at a rate
# above capacity for 20 s of 10 ms batches. Prints, per run, the events the job read over the
# wall time from the start of batch 0 to the end of the job (what was processed, not offered).
#
# Usage: scripts/ysb-sql-vs-job.sh [PAIRS]   (default 3; needs target/release/sleet)
set -euo pipefail
root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
bin="$root/target/release/sleet"
pairs="${1:-3}"
out="$root/target/ysb-sql-vs-job"
rm -rf "$out"; mkdir -p "$out"
sed -e "s/rate = '200000'/rate = '6000000'/" \
    -e "s/SET 'batch.interval' = '100ms';/SET 'batch.interval' = '10ms'; SET 'duration' = '20s';/" \
    "$root/examples/ysb.sql" > "$out/ysb.sql"

run() {
    local kind="$1" pair="$2" dir="$out/$1-$2" start_ms end_ms address events pids=()
    mkdir -p "$dir"
    start_ms=$(( ($(date +%s%3N) + 4000) / 10 * 10 ))
    if [ "$kind" = job ]; then
        (cd "$dir" && "$bin" job ysb --rate 6000000 --batch-interval 10ms --duration 20) > "$dir/job.json"
    else
        (cd "$dir" && "$bin" sql "$out/ysb.sql") > "$dir/job.json"
    fi
    python3 - "$dir/job.json" "$start_ms" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
job["settings"]["start_ms"] = int(sys.argv[2])
json.dump(job, open(sys.argv[1], "w"))
PY
    "$bin" driver --listen 127.0.0.1:0 --expect-workers 2 --checkpoint-dir "$dir/checkpoints" \
        > "$dir/driver.out" 2> "$dir/driver.log" &
    pids+=($!)
    for _ in $(seq 50); do
        address=$(grep -o '127.0.0.1:[0-9]*' "$dir/driver.out" | head -1 || true)
        [ -n "$address" ] && break
        sleep 0.1
    done
    for worker in 1 2; do
        "$bin" worker --driver "$address" --cores 1 > /dev/null 2> "$dir/worker-$worker.log" &
        pids+=($!)
    done
    (cd "$dir" && "$bin" submit job.json --driver "$address") > "$dir/submit.out" 2> "$dir/submit.err"
    end_ms=$(date +%s%3N)
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    events=$(grep -o '[0-9]* events in' "$dir/submit.out" | grep -o '^[0-9]*')
    python3 -c "print('$kind', 'pair $pair', 'events $events', 'wall_s', ($end_ms - $start_ms) / 1000, 'events_per_s', round($events / (($end_ms - $start_ms) / 1000)))" \
        | tee -a "$out/results.txt"
}

for pair in $(seq 1 "$pairs"); do
    if [ $((pair % 2)) -eq 1 ]; then run job "$pair"; run sql "$pair"; else run sql "$pair"; run job "$pair"; fi
done
