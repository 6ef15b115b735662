#!/usr/bin/env bash
# Every host test: unit, integration, property and doc tests, on each feature set.
source "$(dirname "$0")/common.sh"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "cargo test --workspace"
cargo test --workspace 2>&1 | tee -a "$log"
step "cargo test -p dinah --no-default-features (core only)"
cargo test -p dinah --no-default-features 2>&1 | tee -a "$log"
step "cargo run --example runtime_basics"
cargo run --example runtime_basics

passed=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s += $1} END {print s + 0}')
echo "host tests: $passed passed, $failed failed"
mkdir -p target
echo "$passed $failed" > target/ci-test-counts
