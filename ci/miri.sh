#!/usr/bin/env bash
# Runs dinah-core's unit tests under Miri (undefined behaviour in the code
# dinah-core runs, heapless's unsafe internals included). Needs a nightly
# toolchain with the miri component; if rustup cannot provide one, this part
# says so and is skipped.
source "$(dirname "$0")/common.sh"

if ! cargo +nightly miri --version >/dev/null 2>&1; then
    timeout 300 rustup toolchain install nightly --profile minimal --component miri,rust-src >/dev/null 2>&1 || true
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri: SKIPPED: no nightly toolchain with miri could be installed on this machine"
    exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "cargo +nightly miri test -p dinah-core --lib"
# proptest looks up the working directory for its failure file.
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test -p dinah-core --lib 2>&1 | tee "$log"
record_test_counts "$log" miri
