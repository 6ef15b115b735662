#!/usr/bin/env bash
# Checks that dinah-core builds with the declared rust-version.
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
step "dinah-core with Rust $msrv (the declared rust-version)"
if ! rustup toolchain list | grep -q "^$msrv"; then
    echo "installing Rust $msrv through rustup (up to five minutes)"
    timeout 300 rustup toolchain install "$msrv" --profile minimal
fi
cargo "+$msrv" check -p dinah-core
cargo "+$msrv" check -p dinah-core --features defmt
cargo "+$msrv" check -p dinah-core --features embedded-hal-async
cargo "+$msrv" check -p dinah-std
cargo "+$msrv" check -p dinah
