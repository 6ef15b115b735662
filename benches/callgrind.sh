#!/usr/bin/env bash
# Instructions per wake+poll under callgrind, for each contender of
# benches/executor.rs (or, with DINAH_BENCH=hosted or telemetry, of benches/hosted.rs or
# benches/telemetry.rs):
# one task yields 1,000 and 101,000 times; the difference in total
# instructions divided by 100,000 cancels start-up, spawning and shutdown.
# Counts are deterministic, unlike times.
#
#   ./benches/callgrind.sh                        dinah, embassy, local-pool, each
#                                                  also with a yield of the bench's own
#   DINAH_BENCH=hosted ./benches/callgrind.sh     dinah (block_on), ticked (out-of-line tick), tokio,
#                                                  local-pool, async-executor
#   DINAH_BENCH=telemetry ./benches/callgrind.sh  dinah unmeasured and measured, tokio
#   DINAH_BENCH=sync ./benches/callgrind.sh       one uncontended semaphore acquire and release:
#                                                  dinah's SharedSemaphore and static Semaphore, tokio's
#   DINAH_BENCH=handoff ./benches/callgrind.sh    one ping-pong handoff between two tasks (executor.rs's
#                                                  ping_pong case: rounds of 2,000 handoffs, 1 and 11 rounds):
#                                                  dinah's core executor, embassy's raw executor
#   DINAH_BENCH=multi ./benches/callgrind.sh      one task spawned from a task and run, on one worker:
#                                                  dinah's MultiExecutor, tokio multi-thread, async-executor
#                                                  (rounds of 10,000 spawns: 1 and 3 rounds)
#   DINAH_CARGO_ARGS="--no-default-features --features std" ./benches/callgrind.sh dinah
#                                                  built without the telemetry feature
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "callgrind: valgrind is not installed" >&2; exit 1; }
name="${DINAH_BENCH:-executor}"
case "$name" in
    executor) default_contenders="dinah embassy local-pool dinah-here embassy-here local-pool-here" ;;
    hosted) default_contenders="dinah ticked tokio local-pool async-executor" ;;
    telemetry) default_contenders="dinah measured tokio" ;;
    sync) default_contenders="semaphore-dinah semaphore-static semaphore-tokio" ;;
    multi) default_contenders="dinah tokio async-executor" ;;
    handoff) default_contenders="dinah-ping-pong embassy-ping-pong" ;;
    *) echo "callgrind: DINAH_BENCH is executor, hosted, telemetry, sync, multi or handoff, not $name" >&2; exit 1 ;;
esac
unit=yields
one=wake+poll
short_n=1000
long_n=101000
per=100000
[ "$name" = sync ] && unit=rounds && one="acquire+release"
if [ "$name" = multi ]; then
    unit="rounds of 10,000 spawns"
    one="spawned task"
    short_n=1
    long_n=3
    per=20000
fi
if [ "$name" = handoff ]; then
    unit="rounds of 2,000 handoffs"
    one="handoff"
    short_n=1
    long_n=11
    per=20000
    name=executor
fi
read -ra cargo_args <<<"${DINAH_CARGO_ARGS:-}"
bench=$(cargo bench --bench "$name" "${cargo_args[@]}" --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$name")
# The telemetry bench counts only what its `callgrind` function runs: not
# the telemetry clock's calibration before it (time-bounded, so its count
# varies from run to run). The others count the whole process: embassy
# runs on a thread of its own.
only=()
[ "$name" = telemetry ] && only=(--toggle-collect='*::callgrind')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
instructions() {
    valgrind --tool=callgrind "${only[@]}" --callgrind-out-file="$out/cg" \
        "$bench" --callgrind "$1" "$2" >/dev/null 2>&1
    callgrind_annotate "$out/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
echo "bench binary: $bench"
for contender in "${@:-$default_contenders}"; do
    for c in $contender; do
        short=$(instructions "$c" "$short_n")
        long=$(instructions "$c" "$long_n")
        echo "$c: $short instructions at $short_n $unit, $long at $long_n: $(( (long - short) / per )) per $one"
    done
done
