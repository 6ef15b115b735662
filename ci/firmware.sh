#!/usr/bin/env bash
# Runs the QEMU firmware (the queue-and-scheduler example, the async
# executor example, the watchdog, the timers (tickless and periodic), the spawn, the events, the delay and the priorities examples) and the on-target tests on thumbv7m (lm3s6965evb) and
# thumbv6m (microbit), decodes their defmt logs and compares them line by
# line with ci/expected/. Any difference, non-zero exit or hang fails.
#
# Every run is under QEMU's -icount (run.sh's default): virtual time
# advances with instructions only, so SysTick fires at the same instruction
# in every run and a stall of the host cannot reorder an interrupt and a
# task. In real time, a host stall during the watchdog's polite task makes
# its short poll look blocked, and the watchdog rightly reports that task.
#
#   ./ci/firmware.sh           check against ci/expected/
#   ./ci/firmware.sh --bless   rewrite ci/expected/ from this run
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

bless=""
[ "${1:-}" = "--bless" ] && bless=1

targets=(thumbv7m-none-eabi thumbv6m-none-eabi)
setup_embedded_toolchain "${targets[@]}"

command -v qemu-system-arm >/dev/null || apt_install qemu-system-arm
if ! command -v defmt-print >/dev/null; then
    step "installing defmt-print 1.2.0 (cargo builds it from source: a few minutes, one line per crate)"
    cargo install defmt-print --version 1.2.0 --locked
fi

firmware_dir=examples/qemu
test_logs=$(mktemp)
trap 'rm -f "$test_logs"' EXIT
export CARGO_TARGET_DIR="$PWD/target/firmware"
mkdir -p ci/expected
failures=0
unset QEMU_REALTIME

# Reads cargo's JSON messages and prints the executable built for target $1.
# It reads to the end: leaving early closes the pipe while cargo may still be
# writing messages for other targets, and cargo then fails with EPIPE.
built_executable() {
    python3 -c '
import json, sys
name = sys.argv[1]
found = None
for line in sys.stdin:
    msg = json.loads(line)
    if found is None and msg.get("reason") == "compiler-artifact" \
            and msg.get("executable") and msg["target"]["name"] == name:
        found = msg["executable"]
if found is None:
    sys.exit("cargo built no executable named " + name)
print(found)' "$1"
}

# Runs one ELF under QEMU and compares its decoded log with ci/expected/$2.log.
run_and_compare() {
    local elf="$1" name="$2" log expected="ci/expected/$2.log" status=0
    log=$(mktemp)
    (cd "$firmware_dir" && ./run.sh "$elf") >"$log" || status=$?
    cat "$log"
    [[ "$name" == on-target-* ]] && cat "$log" >>"$test_logs"
    if [ "$status" -ne 0 ]; then
        echo "FAILED: $name exited with status $status (124 means it hung)"
        failures=$((failures + 1))
    elif [ -n "$bless" ]; then
        cp "$log" "$expected"
        echo "blessed $expected"
    elif ! diff -u "$expected" "$log"; then
        echo "FAILED: $name log differs from $expected"
        failures=$((failures + 1))
    else
        echo "ok: $name matches $expected ($(wc -l <"$expected") lines)"
    fi
    rm -f "$log"
}

# Builds firmware $1 for $target (further cargo arguments: $4...), runs it
# and compares its log with ci/expected/$2.log, under the step named $3.
run_firmware() {
    local bin="$1" name="$2" what="$3" elf
    shift 3
    step "$what"
    elf=$(cd "$firmware_dir" && "${EMBEDDED_CARGO[@]}" build --release --target "$target" "${EMBEDDED_FLAGS[@]}" "${FIRMWARE_CARGO_CONFIG[@]}" \
        --bin "$bin" "$@" --message-format=json-render-diagnostics \
        | built_executable "$bin")
    run_and_compare "$elf" "$name"
}

for target in "${targets[@]}"; do
    short=${target%%-*}
    for features in "" "metrics32"; do
        step "clippy on the firmware for $target ${features:+(features: $features)}"
        if [ ${#EMBEDDED_FLAGS[@]} -eq 0 ]; then
            (cd "$firmware_dir" && cargo clippy --release --target "$target" \
                --all-targets ${features:+--features "$features"} -- -D warnings)
        else
            echo "skipped: Debian's toolchain ships no clippy (the host lint covers dinah-core)"
        fi

        step "firmware example on $target ${features:+(features: $features)}"
        elf=$(cd "$firmware_dir" && "${EMBEDDED_CARGO[@]}" build --release --target "$target" "${EMBEDDED_FLAGS[@]}" "${FIRMWARE_CARGO_CONFIG[@]}" \
            --bin dinah-qemu ${features:+--features "$features"} --message-format=json-render-diagnostics \
            | built_executable dinah-qemu)
        # Both counter widths must log exactly the same lines.
        if [ -z "$features" ] || [ -z "$bless" ]; then
            run_and_compare "$elf" "qemu-$short"
        fi
    done

    run_firmware dinah-qemu-executor "qemu-executor-$short" "executor firmware on $target"
    run_firmware dinah-qemu-watchdog "qemu-watchdog-$short" \
        "watchdog firmware on $target (a task that never yields, reported from SysTick)"
    run_firmware dinah-qemu-timers "qemu-timers-$short" "timers firmware on $target (tickless SysTick)"
    if [ ${#EMBEDDED_FLAGS[@]} -eq 0 ]; then
        (cd "$firmware_dir" && cargo clippy --release --target "$target" \
            --bin dinah-qemu-timers --features periodic -- -D warnings)
    fi
    run_firmware dinah-qemu-timers "qemu-timers-periodic-$short" \
        "timers firmware on $target (periodic SysTick, 250 us)" --features periodic
    run_firmware dinah-qemu-spawn "qemu-spawn-$short" \
        "spawn firmware on $target (a task pool fed by a task and an interrupt)"
    run_firmware dinah-qemu-events "qemu-events-$short" \
        "events firmware on $target (an interrupt raises a static io::Event for two tasks)"
    run_firmware dinah-qemu-delay "qemu-delay-$short" \
        "delay firmware on $target (embedded-hal-async's DelayNs on the timers)"
    run_firmware dinah-qemu-priorities "qemu-priorities-$short" \
        "priorities firmware on $target (an interrupt executor on PendSV preempts a long poll)"

    step "on-target tests on $target"
    elf=$(cd "$firmware_dir" && "${EMBEDDED_CARGO[@]}" test --no-run --release --target "$target" "${EMBEDDED_FLAGS[@]}" "${FIRMWARE_CARGO_CONFIG[@]}" \
        --test on_target --message-format=json-render-diagnostics | built_executable on_target)
    run_and_compare "$elf" "on-target-$short"
done

passed=$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$test_logs" | awk '{s += $1} END {print s + 0}')
failed=$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$test_logs" | awk '{s += $3} END {print s + 0}')
echo "on-target tests: $passed passed, $failed failed"
mkdir -p target
echo "$passed $failed" >target/ci-counts-on-target

if [ "$failures" -ne 0 ]; then
    echo "firmware: $failures run(s) failed"
    exit 1
fi
echo "firmware: both targets ran the example and the on-target tests as expected"
