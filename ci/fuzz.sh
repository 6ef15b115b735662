#!/usr/bin/env bash
# Runs every libFuzzer target in fuzz/ for a fixed number of runs, starting
# from its committed corpus in fuzz/corpus/. New inputs go to a scratch
# directory, so the checkout stays clean. A crash fails this part and leaves
# its input in fuzz/artifacts/; turn it into a regression test.
#
#   ./ci/fuzz.sh              every target, DINAH_FUZZ_RUNS runs each (default 50000),
#                             or DINAH_FUZZ_SECONDS seconds each (default 60), whichever ends first
#   ./ci/fuzz.sh queue_ops    one target
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source=ci/nightly.sh
source "$(dirname "$0")/nightly.sh"

if ! nightly_with rust-src; then
    echo "fuzz: SKIPPED: no nightly toolchain could be installed on this machine"
    exit 0
fi
if ! command -v cargo-fuzz >/dev/null; then
    step "installing cargo-fuzz (cargo builds it from source: a few minutes, one line per crate)"
    cargo install cargo-fuzz --locked
fi

runs="${DINAH_FUZZ_RUNS:-50000}"
seconds="${DINAH_FUZZ_SECONDS:-60}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && mapfile -t targets < <(cd fuzz && cargo fuzz list)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

passed=0
failed=0
for target in "${targets[@]}"; do
    step "fuzz $target: $runs runs (at most $seconds s) from fuzz/corpus/$target"
    mkdir -p "$scratch/$target"
    if (cd fuzz && cargo +nightly fuzz run "$target" "$scratch/$target" "corpus/$target" \
        -- -runs="$runs" -max_total_time="$seconds" -max_len=256 -print_final_stats=1 2>&1 | tail -n 12); then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: fuzz target $target crashed; its input is in fuzz/artifacts/$target/"
    fi
done
echo "fuzz: $passed passed, $failed failed"
mkdir -p target
echo "$passed $failed" >target/ci-counts-fuzz
[ "$failed" -eq 0 ]
