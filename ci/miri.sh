#!/usr/bin/env bash
# Runs every host test that Miri can run, in all three crates, under Miri:
# undefined behaviour, leaks and data races in the code the tests reach,
# heapless's and std's unsafe internals included. Tests shrink their sizes
# under cfg(miri); none is skipped silently. Needs a nightly toolchain with
# the miri component; if rustup cannot provide one, this part says so and is
# skipped.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"
# shellcheck source=ci/nightly.sh
source "$(dirname "$0")/nightly.sh"

if ! nightly_with miri rust-src; then
    echo "miri: SKIPPED: no nightly toolchain with miri could be installed on this machine"
    exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Not under Miri, with the reason printed here and by the test itself:
echo "miri: tests/thread_limits.rs runs only its skip notice (Miri cannot start the child process it limits)"
echo "miri: tests/relay_stall.rs is compiled out (three runtimes and their threads take many minutes interpreted); its verdict logic runs here in tests/diagnose.rs, and the suite itself natively and under ThreadSanitizer"
echo "miri: tests/chrome_trace.rs checks only the opening of the committed timelines in artifacts/traces (parsing half a megabyte of JSON interpreted takes many minutes); the generated timelines are checked in full"
echo "miri: tests/relay.rs is compiled out (the relay service's three threads and their sockets through many round trips take many minutes interpreted); its parts' logic runs here in tests/net.rs and tests/diagnose.rs, and the suite itself natively and under ThreadSanitizer"
echo "miri: tests/net.rs leaves out its UDP test, and the UDP half of one other, and tests/multi_waiter.rs its three UDP tests (Miri has no sendto or socket ioctl); their TCP tests run, tests/net.rs with 4 connections instead of 32"
echo "miri: tests/multi_executor_allocations.rs runs natively only (it counts allocations, which Miri would not change, over runs of thousands of tasks that take many minutes interpreted); the global queue it exercises has its unit tests here"
echo "miri: the allocator-refusal half of dinah-std's capacity tests returns early (Miri halts on an allocation it cannot serve); the overflow half runs"

echo "miri: the multi-thread executor's tests (tests named multi_executor, the doc tests of dinah-std/src/multi/, and the README's examples, one of which runs it) run in a pass of their own under Tree Borrows, without the leak check and with sequentially consistent memory (loom checks their sleep protocol under weak memory): crossbeam-epoch, under crossbeam-deque, breaks Stacked Borrows' rules and keeps Tree Borrows', and its global collector keeps each thread's record and deferred garbage in a static for the life of the process (crossbeam's own CI runs Miri so); every future's single drop is checked by the tests themselves"

step "cargo +nightly miri test --workspace (unit, integration and doc tests; the multi-thread executor's aside)"
# proptest looks up the working directory for its failure file.
MIRIFLAGS="-Zmiri-disable-isolation" cargo +nightly miri test --workspace -- --skip multi_executor --skip src/multi/ --skip ReadmeDoctests 2>&1 | tee "$log"

step "cargo +nightly miri test (the multi-thread executor's tests, under Tree Borrows)"
# Miri's weak-memory emulation can also give SeqCst fences outcomes that
# C++20 forbids (rust-lang/miri#2301, #5104): the workers' sleep protocol
# (a fence on each side, as tokio's) then deadlocks in Miri alone. That
# protocol is model-checked under weak memory by loom (loom_workers), so
# this pass checks the rest with sequentially consistent memory.
export MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows -Zmiri-ignore-leaks -Zmiri-disable-weak-memory-emulation"
cargo +nightly miri test -p dinah --test runtime_contract --test multi_executor --test multi_executor_telemetry --test multi_executor_stress --test http --test task_group --test panics_in_user_code --test time_delay -- multi_executor 2>&1 | tee -a "$log"
cargo +nightly miri test -p dinah-std --doc -- src/multi/ 2>&1 | tee -a "$log"
cargo +nightly miri test -p dinah --doc -- ReadmeDoctests 2>&1 | tee -a "$log"
record_test_counts "$log" miri
