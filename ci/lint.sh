#!/usr/bin/env bash
# Formatting, clippy and rustdoc, on every crate and feature set, warnings denied.
source "$(dirname "$0")/common.sh"

rustup component add rustfmt clippy >/dev/null 2>&1 || true

step "cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path examples/qemu/Cargo.toml -- --check

# Each line is one feature set: arguments for cargo clippy / cargo doc.
feature_sets=(
    "--workspace"
    "-p dinah-core --features defmt"
    "-p dinah --no-default-features"
    "-p dinah --features defmt"
)

for set in "${feature_sets[@]}"; do
    step "cargo clippy --all-targets $set"
    # shellcheck disable=SC2086
    cargo clippy --all-targets $set -- -D warnings
done

for set in "${feature_sets[@]}"; do
    step "cargo doc $set"
    # shellcheck disable=SC2086
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps $set
done
