# shellcheck shell=bash
# Helpers for the parts that need a nightly toolchain. Source it after
# common.sh; do not run it.

# Makes sure the nightly toolchain has the components named in "$@"
# (for example miri rust-src). Returns non-zero if rustup cannot provide
# them, so the caller can say so and skip.
nightly_with() {
    local missing=()
    for component in "$@"; do
        rustup component list --toolchain nightly --installed 2>/dev/null \
            | grep -q "^$component" || missing+=("$component")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing a nightly toolchain with ${missing[*]} through rustup (up to five minutes)"
    timeout 300 rustup toolchain install nightly --profile minimal \
        --component "$(IFS=,; echo "${missing[*]}")" >/dev/null 2>&1 || true
    for component in "$@"; do
        rustup component list --toolchain nightly --installed 2>/dev/null \
            | grep -q "^$component" || return 1
    done
}
