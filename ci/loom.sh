#!/usr/bin/env bash
# Model-checks the parallel dispatch and trace protocols with loom.
source "$(dirname "$0")/common.sh"

step "loom models (dinah-std)"
# A separate target dir keeps the --cfg loom build from evicting the normal one.
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
    CARGO_TARGET_DIR=target/loom \
    cargo test --release -p dinah-std --test loom_dispatch --test loom_trace
