#!/usr/bin/env bash
# Prints the example firmware's flash and static RAM per target, with 64-bit
# and with 32-bit metrics counters, and the sizes of dinah-core's types as
# the firmware reports them. Fails if the thumbv6m firmware exceeds its
# budget of 8 KiB flash and 2 KiB static RAM.
#
# Each firmware's section sizes are also committed in ci/expected/*.size, so
# growth shows up in review. Built with the toolchain named in that file,
# any difference fails; built with another toolchain, the difference is
# printed as a notice only (codegen differs between compilers).
#
#   ./ci/footprint.sh            print and check
#   ./ci/footprint.sh --bless    rewrite ci/expected/*.size from this build
#   ./ci/footprint.sh --record   also write artifacts/footprint/footprint-DATE.txt
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

targets=(thumbv6m-none-eabi thumbv7m-none-eabi)
setup_embedded_toolchain "${targets[@]}" >/dev/null
export CARGO_TARGET_DIR="$PWD/target/firmware"

flash_budget=8192
ram_budget=2048
over=0
size_changes=0
toolchain=$("${EMBEDDED_CARGO[@]}" rustc --version 2>/dev/null || rustc --version)

# Compares (or with --bless, writes) ci/expected/$1.size, holding the
# toolchain and the section sizes in $2.
check_size_file() {
    local name="$1" sizes="$2" file="ci/expected/$1.size" expected_toolchain current
    current=$(printf 'toolchain: %s\n%s\n' "$toolchain" "$sizes")
    if [ "${mode:-}" = "--bless" ] || ! [ -f "$file" ]; then
        echo "$current" >"$file"
        echo "wrote $file" >&2
        return
    fi
    if ! diff -u "$file" <(echo "$current") >&2; then
        expected_toolchain=$(sed -n 's/^toolchain: //p' "$file")
        if [ "$expected_toolchain" = "$toolchain" ]; then
            echo "SIZE CHANGED: $name (bless with ./ci/footprint.sh --bless after review)" >&2
            size_changes=$((size_changes + 1))
        else
            echo "notice: $name sizes differ, but $file was measured with $expected_toolchain" >&2
        fi
    fi
}

report() {
    echo "# dinah-core firmware footprint"
    echo
    echo "Firmware: examples/qemu (release: opt-level \"s\", LTO, one codegen unit),"
    echo "defmt logging on. defmt's format strings live in the non-loaded .defmt"
    echo "section and are not counted. Toolchain: $toolchain."
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
            check_size_file "qemu-${target%%-*}-${counters}bit" \
                "$(printf '.vector_table %s\n.text %s\n.rodata %s\n.data %s\n.bss %s\n.uninit %s\nflash %s\nstatic RAM %s' \
                    "$vt" "$text" "$rodata" "$data" "$bss" "$uninit" "$flash" "$ram")"
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
