#!/usr/bin/env bash
# Prints the example firmwares' flash and static RAM per target (the queue
# example with 64-bit and with 32-bit metrics counters, and the async
# executor example), the sizes of dinah-core's types as the firmware reports
# them, and the executor's instructions per wake+poll under QEMU -icount.
# Fails if a thumbv6m firmware exceeds its budget of 8 KiB flash and 2 KiB
# static RAM.
#
# Each firmware's section sizes (and the executor's wake+poll cost) are also
# committed in ci/expected/*.size, so growth shows up in review. Built with
# the toolchain named in that file, a change beyond a few bytes of drift
# fails (see check_size_file); built with another toolchain, the difference
# is printed as a notice only (codegen differs between compilers).
#
#   ./ci/footprint.sh            print and check
#   ./ci/footprint.sh --bless    rewrite ci/expected/*.size from this build
#   ./ci/footprint.sh --record   also write artifacts/footprint/footprint-DATE.txt
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

targets=(thumbv6m-none-eabi thumbv7m-none-eabi)
setup_embedded_toolchain "${targets[@]}" >/dev/null
export CARGO_TARGET_DIR="$PWD/target/firmware"
# The instruction counts need run.sh's -icount (its default).
unset QEMU_REALTIME

flash_budget=8192
ram_budget=2048
over=0
size_changes=0
toolchain=$("${EMBEDDED_CARGO[@]}" rustc --version 2>/dev/null || rustc --version)

# Compares (or with --bless, writes) ci/expected/$1.size, holding the
# toolchain and the figures in $2. The same toolchain builds a few bytes
# differently in another checkout folder (Cargo's metadata hash of a path
# dependency includes its path, which moves symbols and padding), so a figure
# within 32 bytes or 1 % of the recorded one (2 for an instruction count) is
# a notice; a larger change fails. Another toolchain only gets a notice.
check_size_file() {
    local name="$1" sizes="$2" file="ci/expected/$1.size" expected_toolchain current verdict
    current=$(printf 'toolchain: %s\n%s\n' "$toolchain" "$sizes")
    if [ "${mode:-}" = "--bless" ] || ! [ -f "$file" ]; then
        echo "$current" >"$file"
        echo "wrote $file" >&2
        return
    fi
    diff -u "$file" <(echo "$current") >&2 && return
    expected_toolchain=$(sed -n 's/^toolchain: //p' "$file")
    if [ "$expected_toolchain" != "$toolchain" ]; then
        echo "notice: $name differs, but $file was measured with $expected_toolchain" >&2
        return
    fi
    verdict=$(python3 - "$file" <(echo "$current") <<'PY'
import sys
def figures(path):
    out = {}
    for line in open(path):
        key, _, value = line.strip().rpartition(" ")
        if key and value.isdigit():
            out[key] = int(value)
    return out
old, new = figures(sys.argv[1]), figures(sys.argv[2])
for key in sorted(set(old) | set(new)):
    a, b = old.get(key), new.get(key)
    if a is None or b is None:
        print(f"changed: {key} appeared or went")
        sys.exit()
    slack = 2 if "instructions" in key else max(32, a // 100)
    if abs(b - a) > slack:
        print(f"changed: {key} {a} -> {b}")
        sys.exit()
print("drift")
PY
)
    if [ "$verdict" = drift ]; then
        echo "notice: $name drifted by a few bytes, within what the build path explains" >&2
    else
        echo "SIZE CHANGED: $name: ${verdict#changed: } (bless with ./ci/footprint.sh --bless after review)" >&2
        size_changes=$((size_changes + 1))
    fi
}

# Builds firmware $1 for target $2 (cargo arguments after the fourth),
# prints its table row, checks ci/expected/$4.size and the thumbv6m budget.
measure_firmware() {
    local bin="$1" target="$2" counters="$3" name="$4" elf
    shift 4
    (cd examples/qemu && "${EMBEDDED_CARGO[@]}" build --quiet --release --target "$target" \
        "${EMBEDDED_FLAGS[@]}" "${FIRMWARE_CARGO_CONFIG[@]}" --bin "$bin" "$@")
    elf="$CARGO_TARGET_DIR/$target/release/$bin"
    read -r vt text rodata data bss uninit < <(size -A "$elf" | awk '
        $1 == ".vector_table" {vt = $2} $1 == ".text" {text = $2}
        $1 == ".rodata" {rodata = $2} $1 == ".data" {data = $2}
        $1 == ".bss" {bss = $2} $1 == ".uninit" {uninit = $2}
        END {print vt + 0, text + 0, rodata + 0, data + 0, bss + 0, uninit + 0}')
    flash=$((vt + text + rodata + data))
    ram=$((data + bss + uninit))
    [ "$counters" = - ] && counters="" || counters="${counters}-bit"
    echo "| $bin | $target | ${counters:-n/a} | $vt | $text | $rodata | $data | $flash | $bss | $uninit | $ram |"
    check_size_file "$name" \
        "$(printf '.vector_table %s\n.text %s\n.rodata %s\n.data %s\n.bss %s\n.uninit %s\nflash %s\nstatic RAM %s' \
            "$vt" "$text" "$rodata" "$data" "$bss" "$uninit" "$flash" "$ram")"
    if [ "$target" = thumbv6m-none-eabi ] && { [ "$flash" -gt "$flash_budget" ] || [ "$ram" -gt "$ram_budget" ]; }; then
        echo "OVER BUDGET: $bin on $target: flash $flash > $flash_budget or RAM $ram > $ram_budget" >&2
        over=1
    fi
}

# Runs the wake-cost firmware on thumbv7m under -icount and checks its
# instructions per wake+poll (whole instructions) against
# ci/expected/wake-cost-thumbv7m.size.
wake_cost() {
    local elf watch_elf timed_elf line cost watched timed
    (cd examples/qemu && "${EMBEDDED_CARGO[@]}" build --quiet --release --target thumbv7m-none-eabi \
        "${EMBEDDED_FLAGS[@]}" "${FIRMWARE_CARGO_CONFIG[@]}" --bin dinah-qemu-wake-cost --bin dinah-qemu-watch-cost \
        --bin dinah-qemu-timed-cost)
    elf="$CARGO_TARGET_DIR/thumbv7m-none-eabi/release/dinah-qemu-wake-cost"
    watch_elf="$CARGO_TARGET_DIR/thumbv7m-none-eabi/release/dinah-qemu-watch-cost"
    timed_elf="$CARGO_TARGET_DIR/thumbv7m-none-eabi/release/dinah-qemu-timed-cost"
    if ! command -v defmt-print >/dev/null; then
        echo "installing defmt-print 1.2.0 (cargo builds it from source: a few minutes, one line per crate)"
        cargo install defmt-print --version 1.2.0 --locked
    fi
    command -v qemu-system-arm >/dev/null || apt_install qemu-system-arm
    line=$(cd examples/qemu && ./run.sh "$elf" | grep 'instructions per wake+poll')
    cost=$(echo "$line" | sed -n 's/.*: \([0-9]*\)\.[0-9]*$/\1/p')
    line=$(cd examples/qemu && ./run.sh "$watch_elf" | grep 'instructions per observed wake+poll')
    watched=$(echo "$line" | sed -n 's/.*: \([0-9]*\)\.[0-9]*$/\1/p')
    line=$(cd examples/qemu && ./run.sh "$timed_elf" | grep 'instructions per timed wake+poll')
    timed=$(echo "$line" | sed -n 's/.*: \([0-9]*\)\.[0-9]*$/\1/p')
    echo "AsyncExecutor, thumbv7m (QEMU lm3s6965evb, -icount shift=0): $cost instructions per wake+poll of a trivial task (goal: at most 120; embassy: 79 cycles on an nRF52840); $watched when a PollWatch observes every poll; $timed over a Timed queue (SysTick stamps) with PollTimes keeping poll times and wake-to-poll delays."
    check_size_file wake-cost-thumbv7m "instructions per wake+poll $cost
instructions per wake+poll with a PollWatch $watched
instructions per wake+poll, Timed with PollTimes $timed"
}

# Runs the timer-cost firmware on thumbv7m under -icount and checks its
# instructions per timer fire (a sleep made, armed, fired, completed and
# dropped) against ci/expected/timer-cost-thumbv7m.size.
timer_cost() {
    local elf line cost
    (cd examples/qemu && "${EMBEDDED_CARGO[@]}" build --quiet --release --target thumbv7m-none-eabi \
        "${EMBEDDED_FLAGS[@]}" "${FIRMWARE_CARGO_CONFIG[@]}" --bin dinah-qemu-timer-cost)
    elf="$CARGO_TARGET_DIR/thumbv7m-none-eabi/release/dinah-qemu-timer-cost"
    line=$(cd examples/qemu && ./run.sh "$elf" | grep 'instructions per timer fire')
    cost=$(echo "$line" | sed -n 's/.*: \([0-9]*\)\.[0-9]*$/\1/p')
    echo "Timers, thumbv7m (QEMU lm3s6965evb, -icount shift=0): $cost instructions per timer fire (a sleep made, armed, fired by expire, completed and dropped)."
    check_size_file timer-cost-thumbv7m "instructions per timer fire $cost"
}

report() {
    echo "# dinah-core firmware footprint"
    echo
    echo "Firmware: examples/qemu (release: opt-level \"s\", LTO, one codegen unit),"
    echo "defmt logging on. defmt's format strings live in the non-loaded .defmt"
    echo "section and are not counted. Toolchain: $toolchain."
    echo
    echo "| firmware | target | metrics counters | .vector_table | .text | .rodata | .data | flash total | .bss | .uninit | static RAM total |"
    echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for target in "${targets[@]}"; do
        measure_firmware dinah-qemu "$target" 64 "qemu-${target%%-*}-64bit"
        measure_firmware dinah-qemu "$target" 32 "qemu-${target%%-*}-32bit" --features metrics32
        measure_firmware dinah-qemu-executor "$target" - "qemu-executor-${target%%-*}"
        measure_firmware dinah-qemu-timers "$target" - "qemu-timers-${target%%-*}"
        measure_firmware dinah-qemu-spawn "$target" - "qemu-spawn-${target%%-*}"
        measure_firmware dinah-qemu-events "$target" - "qemu-events-${target%%-*}"
        measure_firmware dinah-qemu-delay "$target" - "qemu-delay-${target%%-*}"
        measure_firmware dinah-qemu-priorities "$target" - "qemu-priorities-${target%%-*}"
    done
    echo
    echo "Budget for thumbv6m, each firmware: flash <= $flash_budget B, static RAM <= $ram_budget B."
    echo
    echo "## Executor cost"
    echo
    wake_cost
    echo
    echo "## Timer cost"
    echo
    timer_cost
    echo
    echo "## Type sizes reported by the firmware (checked by ci/firmware.sh)"
    echo
    for target in "${targets[@]}"; do
        short=${target%%-*}
        echo "$target:"
        grep -hE 'size of' "ci/expected/qemu-$short.log" "ci/expected/qemu-executor-$short.log" \
            "ci/expected/qemu-delay-$short.log" "ci/expected/qemu-events-$short.log" | sed 's/^INFO  /- /'
    done
}

mode="${1:-}"
out_file=$(mktemp)
trap 'rm -f "$out_file"' EXIT
# Not in a subshell: the size checks update the counters above.
report >"$out_file"
out=$(cat "$out_file")
echo "$out"
if [ "$mode" = "--record" ]; then
    mkdir -p artifacts/footprint
    file="artifacts/footprint/footprint-$(date -u +%F).txt"
    echo "$out" >"$file"
    echo "recorded $file"
fi
[ "$over" -eq 0 ] || exit 1
if [ "$size_changes" -ne 0 ]; then
    echo "footprint: $size_changes firmware size(s) changed against ci/expected/*.size"
    exit 1
fi
