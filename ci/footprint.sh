#!/usr/bin/env bash
# Prints the example firmware's flash and static RAM per target, with 64-bit
# and with 32-bit metrics counters, and the sizes of dinah-core's types as
# the firmware reports them. Fails if the thumbv6m firmware exceeds its
# budget of 8 KiB flash and 2 KiB static RAM.
#
#   ./ci/footprint.sh            print and check
#   ./ci/footprint.sh --record   also write artifacts/footprint/footprint-DATE.txt
source "$(dirname "$0")/common.sh"

targets=(thumbv6m-none-eabi thumbv7m-none-eabi)
setup_embedded_toolchain "${targets[@]}" >/dev/null
export CARGO_TARGET_DIR="$PWD/target/firmware"

flash_budget=8192
ram_budget=2048
over=0

report() {
    echo "# dinah-core firmware footprint"
    echo
    echo "Firmware: examples/qemu (release: opt-level \"s\", LTO, one codegen unit),"
    echo "defmt logging on. defmt's format strings live in the non-loaded .defmt"
    echo "section and are not counted. Toolchain: $("${EMBEDDED_CARGO[@]}" rustc --version 2>/dev/null || rustc --version)."
    echo
    echo "| target | metrics counters | .vector_table | .text | .rodata | .data | flash total | .bss | .uninit | static RAM total |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for target in "${targets[@]}"; do
        for counters in 64 32; do
            features=()
            [ "$counters" = 32 ] && features=(--features metrics32)
            (cd examples/qemu && "${EMBEDDED_CARGO[@]}" build --quiet --release --target "$target" \
                "${EMBEDDED_FLAGS[@]}" --bin dinah-qemu "${features[@]}")
            elf="$CARGO_TARGET_DIR/$target/release/dinah-qemu"
            read -r vt text rodata data bss uninit < <(size -A "$elf" | awk '
                $1 == ".vector_table" {vt = $2} $1 == ".text" {text = $2}
                $1 == ".rodata" {rodata = $2} $1 == ".data" {data = $2}
                $1 == ".bss" {bss = $2} $1 == ".uninit" {uninit = $2}
                END {print vt + 0, text + 0, rodata + 0, data + 0, bss + 0, uninit + 0}')
            flash=$((vt + text + rodata + data))
            ram=$((data + bss + uninit))
            echo "| $target | ${counters}-bit | $vt | $text | $rodata | $data | $flash | $bss | $uninit | $ram |"
            if [ "$target" = thumbv6m-none-eabi ] && { [ "$flash" -gt "$flash_budget" ] || [ "$ram" -gt "$ram_budget" ]; }; then
                echo "OVER BUDGET: $target ${counters}-bit: flash $flash > $flash_budget or RAM $ram > $ram_budget" >&2
                over=1
            fi
        done
    done
    echo
    echo "Budget for thumbv6m: flash <= $flash_budget B, static RAM <= $ram_budget B."
    echo
    echo "## Type sizes reported by the firmware (checked by ci/firmware.sh)"
    echo
    for target in "${targets[@]}"; do
        short=${target%%-*}
        echo "$target:"
        grep -E 'size of' "ci/expected/qemu-$short.log" | sed 's/^INFO  /- /'
    done
}

out=$(report)
echo "$out"
if [ "${1:-}" = "--record" ]; then
    mkdir -p artifacts/footprint
    file="artifacts/footprint/footprint-$(date -u +%F).txt"
    echo "$out" >"$file"
    echo "recorded $file"
fi
[ "$over" -eq 0 ] || exit 1
