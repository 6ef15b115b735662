#!/usr/bin/env bash
# Builds dinah-core for microcontroller targets, with and without defmt, and
# checks that it links nothing beyond its four dependencies and no `alloc`.
source "$(dirname "$0")/common.sh"

targets=(thumbv6m-none-eabi thumbv7m-none-eabi thumbv7em-none-eabihf riscv32imac-unknown-none-elf)
setup_embedded_toolchain "${targets[@]}"

for target in "${targets[@]}"; do
    # A target without compare-and-swap needs the binary's choice of
    # portable-atomic back end; this build plays the binary's part.
    extra=()
    [ "$target" = thumbv6m-none-eabi ] && extra=(--features portable-atomic/critical-section)
    for defmt in "" "defmt"; do
        features=("${extra[@]}")
        [ -n "$defmt" ] && features+=(--features defmt)
        step "build dinah-core for $target ${features[*]}"
        "${EMBEDDED_CARGO[@]}" build -p dinah-core --release --target "$target" "${EMBEDDED_FLAGS[@]}" "${features[@]}"
    done
done

step "dinah-core's normal dependencies on thumbv6m"
tree=$(cargo tree -p dinah-core -e normal --target thumbv6m-none-eabi --prefix none --no-dedupe)
echo "$tree"
direct=$(cargo tree -p dinah-core -e normal --target thumbv6m-none-eabi --depth 1 --prefix none | tail -n +2 | awk '{print $1}' | sort -u | tr '\n' ' ')
expected="critical-section heapless portable-atomic "
if [ "$direct" != "$expected" ]; then
    echo "unexpected direct dependencies: '$direct' (expected '$expected', plus defmt when enabled)"
    exit 1
fi
direct_defmt=$(cargo tree -p dinah-core -e normal --features defmt --target thumbv6m-none-eabi --depth 1 --prefix none | tail -n +2 | awk '{print $1}' | sort -u | tr '\n' ' ')
if [ "$direct_defmt" != "critical-section defmt heapless portable-atomic " ]; then
    echo "unexpected direct dependencies with defmt: '$direct_defmt'"
    exit 1
fi
if cargo tree -p dinah-core -e normal,features --target thumbv6m-none-eabi | grep -q 'feature "alloc"'; then
    echo "a dependency of dinah-core enables an alloc feature"
    exit 1
fi
if grep -rn 'extern crate alloc' dinah-core/src; then
    echo "dinah-core must not link alloc"
    exit 1
fi
echo "dinah-core depends on critical-section, heapless, portable-atomic (and defmt when enabled); no alloc"
