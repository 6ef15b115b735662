#!/usr/bin/env bash
# Model-checks the async executor's wake protocol (dinah-core) and the
# parallel dispatch and trace protocols (dinah-std) with loom.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

step "clippy on the loom build (dinah-core and dinah-std with --cfg loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo clippy --release -p dinah-core -p dinah-std --tests -- -D warnings

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "loom models (dinah-core: executor, interrupt hand-off; dinah-std: dispatch, trace, local executor, pools, sync, driver, reactor, workers)"
# A separate target dir keeps the --cfg loom build from evicting the normal one.
export RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" CARGO_TARGET_DIR=target/loom
cargo test --release -p dinah-core --test loom_executor --test loom_interrupt 2>&1 | tee "$log"
# On firmware every wake pushes (no POLLING): that protocol, checked on the host.
step "loom models of the core executor as firmware runs it (--cfg dinah_plain_wakes)"
RUSTFLAGS="--cfg loom --cfg dinah_plain_wakes" CARGO_TARGET_DIR=target/loom-plain \
    cargo test --release -p dinah-core --test loom_executor --test loom_interrupt 2>&1 | tee -a "$log"
cargo test --release -p dinah-std --test loom_dispatch --test loom_trace --test loom_local_executor --test loom_pools --test loom_sync --test loom_driver --test loom_reactor --test loom_workers 2>&1 | tee -a "$log"
record_test_counts "$log" loom
