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
    "-p dinah-core --features embedded-hal-async"
    "-p dinah --features embedded-hal-async"
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

step "cargo clippy -p dinah-core --all-targets --all-features --cfg dinah_plain_wakes (the firmware's wake protocol, on the host)"
RUSTFLAGS="--cfg dinah_plain_wakes" CARGO_TARGET_DIR=target/plain \
    cargo clippy -p dinah-core --all-targets --all-features -- -D warnings

for set in "${feature_sets[@]}"; do
    step "cargo doc $set"
    # shellcheck disable=SC2086
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps $set
done

step "documentation examples use the facade's paths (use dinah::…)"
python3 - <<'PY'
import pathlib, re, sys
bad = []
for path in sorted(pathlib.Path(".").glob("dinah-*/src/**/*.rs")) + sorted(pathlib.Path("src").glob("**/*.rs")):
    in_code = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        doc = re.match(r"\s*//[/!] ?(.*)", line)
        if not doc:
            in_code = False
            continue
        if doc.group(1).startswith("```"):
            in_code = not in_code
        elif in_code and re.search(r"\bdinah_(core|std)::", doc.group(1)):
            bad.append(f"{path}:{number}: {doc.group(1).strip()}")
if bad:
    print("examples that a crate depending on `dinah` could not compile:")
    print("\n".join(bad))
    sys.exit(1)
print("every documentation example uses dinah:: paths")
PY

step "cargo fmt --check and clippy on the fuzz targets"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

step "shellcheck ci/*.sh .ci/run"
command -v shellcheck >/dev/null || apt_install shellcheck
shellcheck -x ci/*.sh .ci/run examples/qemu/run.sh

step "apt waits while another process holds its lock (ci/common.sh)"
(
    export DINAH_APT_LOCK_POLL=1
    # The retry loop: a command refused twice for the lock, then let in.
    tries=$(mktemp)
    # shellcheck disable=SC2317  # called through apt_retry_while_locked
    locked_twice() {
        echo x >>"$tries"
        if [ "$(wc -l <"$tries")" -lt 3 ]; then
            echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1" >&2
            return 100
        fi
    }
    apt_retry_while_locked locked_twice 2>/dev/null
    [ "$(wc -l <"$tries")" -eq 3 ] || { echo "apt lock retry: expected 3 tries"; exit 1; }
    rm -f "$tries"
    # The real thing, as root: apt's own lock held for a few seconds by
    # another process while a (no-op) install runs.
    if [ "$(id -u)" -eq 0 ]; then
        export DINAH_APT_UPDATED=1
        held=$(mktemp)
        python3 -c 'import fcntl, sys, time
lock = open("/var/lib/dpkg/lock-frontend", "w")
fcntl.lockf(lock, fcntl.LOCK_EX)
open(sys.argv[1], "w").write("held")
time.sleep(4)' "$held" &
        holder=$!
        while [ ! -s "$held" ]; do sleep 0.1; done
        apt_install shellcheck
        wait "$holder"
        rm -f "$held"
        echo "apt_install waited for the lock and succeeded"
    fi
)

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
