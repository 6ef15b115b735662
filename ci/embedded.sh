#!/usr/bin/env bash
# Builds dinah-core for microcontroller targets, with and without defmt and
# embedded-hal-async, and checks that it links nothing beyond its four
# dependencies (and the optional ecosystem trait) and no `alloc`.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

targets=("${NO_STD_TARGETS[@]}")
setup_embedded_toolchain "${targets[@]}"

for target in "${targets[@]}"; do
    # A target without compare-and-swap needs the binary's choice of
    # portable-atomic back end; this build plays the binary's part.
    extra=()
    [ "$target" = thumbv6m-none-eabi ] && extra=(--features portable-atomic/critical-section)
    for optional in "" "defmt" "embedded-hal-async"; do
        features=("${extra[@]}")
        [ -n "$optional" ] && features+=(--features "$optional")
        step "build dinah-core for $target ${features[*]}"
        "${EMBEDDED_CARGO[@]}" build -p dinah-core --release --target "$target" "${EMBEDDED_FLAGS[@]}" "${features[@]}"
    done
done

step "dinah-core's normal dependencies on thumbv6m"
tree=$(cargo tree -p dinah-core -e normal --target thumbv6m-none-eabi --prefix none --no-dedupe)
echo "$tree"
# Fails unless dinah-core's direct normal dependencies, with the cargo
# arguments in $1, are exactly the names in $2, and none turns on `alloc`.
check_dependencies() {
    local args="$1" expected="$2" direct
    # shellcheck disable=SC2086
    direct=$(cargo tree -p dinah-core -e normal $args --target thumbv6m-none-eabi --depth 1 --prefix none \
        | tail -n +2 | awk '{print $1}' | sort -u | tr '\n' ' ')
    if [ "$direct" != "$expected " ]; then
        echo "unexpected direct dependencies${args:+ with $args}: '$direct' (expected '$expected')"
        exit 1
    fi
    # shellcheck disable=SC2086
    if cargo tree -p dinah-core -e normal,features $args --target thumbv6m-none-eabi | grep -q 'feature "alloc"'; then
        echo "a dependency of dinah-core${args:+ with $args} enables an alloc feature"
        exit 1
    fi
}
check_dependencies "" "critical-section heapless portable-atomic"
check_dependencies "--features defmt" "critical-section defmt heapless portable-atomic"
check_dependencies "--features embedded-hal-async" "critical-section embedded-hal-async heapless portable-atomic"
if grep -rn 'extern crate alloc' dinah-core/src; then
    echo "dinah-core must not link alloc"
    exit 1
fi
echo "dinah-core depends on critical-section, heapless, portable-atomic (and defmt, embedded-hal-async when enabled); no alloc"
