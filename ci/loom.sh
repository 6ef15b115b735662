#!/usr/bin/env bash
# Model-checks the parallel dispatch and trace protocols with loom.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

step "clippy on the loom build (dinah-std with --cfg loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo clippy --release -p dinah-std --tests -- -D warnings

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "loom models (dinah-std)"
# A separate target dir keeps the --cfg loom build from evicting the normal one.
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
    CARGO_TARGET_DIR=target/loom \
    cargo test --release -p dinah-std --test loom_dispatch --test loom_trace 2>&1 | tee "$log"
record_test_counts "$log" loom
