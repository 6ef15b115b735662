#!/usr/bin/env bash
# Every host test: unit, integration, property and doc tests, on each feature set.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "cargo test --workspace"
cargo test --workspace 2>&1 | tee -a "$log"
step "cargo test -p dinah --no-default-features (the facade without std: tests/facade.rs and a doctest that the hosted layer is absent)"
cargo test -p dinah --no-default-features 2>&1 | tee -a "$log"
step "cargo test -p dinah --features tracing --test tracing_bridge (the tracing bridge, seen by a tracing-subscriber layer)"
cargo test -p dinah --features tracing --test tracing_bridge 2>&1 | tee -a "$log"
step "cargo run --example runtime_basics (the main example: tasks, a channel, timers)"
cargo run --example runtime_basics
step "cargo run --example queue_basics"
cargo run --example queue_basics
step "cargo run --example executor_basics"
cargo run --example executor_basics
step "cargo run --example pools"
cargo run --example pools
step "cargo run --example relay (the relay service over loopback sockets; it checks every event was committed; the timeline must be valid JSON with io waits)"
relay_trace=$(mktemp --suffix=.json)
cargo run --example relay -- --trace "$relay_trace"
python3 -c 'import json, sys; events = json.load(open(sys.argv[1]))["traceEvents"]; assert any(e.get("name") == "io wait" for e in events), "no io wait"; print(len(events), "trace events parsed")' "$relay_trace"
rm -f "$relay_trace"
step "cargo run --example relay -- --workers 2 (the same relay on the multi-thread executor; the timeline must have a lane per worker)"
relay_trace=$(mktemp --suffix=.json)
cargo run --example relay -- --workers 2 --trace "$relay_trace"
python3 -c 'import json, sys; events = json.load(open(sys.argv[1]))["traceEvents"]; lanes = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}; assert {"relay-1", "relay-2"} <= lanes, lanes; print(len(events), "trace events parsed, lanes:", sorted(lanes))' "$relay_trace"
rm -f "$relay_trace"
step "cargo run --example http_server (hyper over dinah's sockets and timers; it sends itself three requests)"
cargo run --example http_server
step "cargo run --example http_server -- --workers 2 (the same, on the multi-thread executor)"
cargo run --example http_server -- --workers 2
step "cargo run --example pipeline (channels, a semaphore, a task group, waiting submits; it checks its own result)"
cargo run --example pipeline
step "cargo run --example relay_stall (every fault in real time; the timeline must be valid JSON)"
trace=$(mktemp --suffix=.json)
cargo run --example relay_stall -- all --trace "$trace"
python3 -c 'import json, sys; events = json.load(open(sys.argv[1]))["traceEvents"]; assert events, "empty timeline"; print(len(events), "trace events parsed")' "$trace"
rm -f "$trace"

record_test_counts "$log" host-tests
