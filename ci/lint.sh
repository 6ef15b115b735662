#!/usr/bin/env bash
# Formatting, clippy and rustdoc, on every crate and feature set, warnings denied.
# shellcheck source=ci/common.sh
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
    "-p dinah-std --features tracing"
    "-p dinah-std --no-default-features"
    "-p dinah --no-default-features --features std"
    "-p dinah --features tracing"
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

step "cargo fmt --check and clippy on the fuzz targets"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

step "shellcheck ci/*.sh .ci/run"
command -v shellcheck >/dev/null || apt_install shellcheck
shellcheck -x ci/*.sh .ci/run examples/qemu/run.sh

step "zizmor .github/workflows (GitHub Actions audit)"
zizmor_venv=target/zizmor-venv
if ! [ -x "$zizmor_venv/bin/zizmor" ]; then
    python3 -m venv "$zizmor_venv" 2>/dev/null || {
        apt_install python3-venv
        python3 -m venv "$zizmor_venv"
    }
    "$zizmor_venv/bin/pip" install --quiet --disable-pip-version-check zizmor
fi
"$zizmor_venv/bin/zizmor" --offline .github/workflows/
