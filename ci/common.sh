# shellcheck shell=bash
# Shared helpers for the ci/ scripts. Source it; do not run it.
set -euo pipefail

# Always run from the repository root.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# The microcontroller targets dinah-core must build for, defined once here.
# shellcheck disable=SC2034  # read by the scripts that source this file
NO_STD_TARGETS=(thumbv6m-none-eabi thumbv7m-none-eabi thumbv7em-none-eabihf riscv32imac-unknown-none-elf)

step() {
    printf '\n==> %s\n' "$*"
}

# Cargo arguments for firmware builds: source paths are remapped so that
# the panic locations in a firmware (and so its size) do not depend on where
# the repository was cloned or where Cargo keeps its downloads, and are
# short, as they take flash. The checkout's paths become relative to its
# root (`dinah-core/src/...`), a crates.io crate's relative to the registry
# folder (`defmt-1.2.0/src/...`; the folder is named by a hash of the
# registry's address, and this rule comes after the general one so that it
# wins), any other registry's start with `/crates`. Merged with
# examples/qemu/.cargo/config.toml.
CRATE_SOURCES="${CARGO_HOME:-$HOME/.cargo}/registry/src"
CRATES_IO_SOURCES="$CRATE_SOURCES/index.crates.io-1949cf8c6b5b557f"
# shellcheck disable=SC2034  # read by the scripts that source this file
FIRMWARE_CARGO_CONFIG=(--config "target.'cfg(all(target_arch = \"arm\", target_os = \"none\"))'.rustflags = [\"--remap-path-prefix=$PWD/=\", \"--remap-path-prefix=$CRATE_SOURCES=/crates\", \"--remap-path-prefix=$CRATES_IO_SOURCES/=\"]")

# How long an apt command waits for another process to let go of the
# package manager's locks, in seconds: a fresh cloud machine runs its own
# apt jobs for its first minutes.
APT_LOCK_WAIT="${DINAH_APT_LOCK_WAIT:-600}"

# Runs a command (an apt-get call), and while it fails because another
# process holds the package manager's lock, runs it again every few seconds,
# for at most APT_LOCK_WAIT seconds. Any other failure fails at once.
apt_retry_while_locked() {
    local deadline=$((SECONDS + APT_LOCK_WAIT)) output status
    while true; do
        status=0
        output=$("$@" 2>&1) || status=$?
        if [ "$status" -eq 0 ]; then
            [ -z "$output" ] || printf '%s\n' "$output"
            return 0
        fi
        if grep -qE 'Could not get lock|Unable to (acquire|lock)' <<<"$output" && [ "$SECONDS" -lt "$deadline" ]; then
            echo "apt: another process holds the package manager's lock; waiting for it" >&2
            sleep "${DINAH_APT_LOCK_POLL:-5}"
            continue
        fi
        printf '%s\n' "$output" >&2
        return "$status"
    done
}

# Runs apt-get as root or through sudo, updating the package lists once, and
# waiting (within APT_LOCK_WAIT) for another process's apt to finish.
apt_install() {
    echo "installing from apt: $* (a few minutes on a fresh machine; apt prints little meanwhile)"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    if [ -z "${DINAH_APT_UPDATED:-}" ]; then
        apt_retry_while_locked "${sudo[@]}" apt-get update -qq -o "DPkg::Lock::Timeout=$APT_LOCK_WAIT"
        export DINAH_APT_UPDATED=1
    fi
    apt_retry_while_locked "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends -o "DPkg::Lock::Timeout=$APT_LOCK_WAIT" "$@" >/dev/null
}

# True when rustc has a prebuilt `core` for target $1.
has_target_core() {
    local libdir
    libdir=$(rustc --print target-libdir --target "$1" 2>/dev/null) || return 1
    compgen -G "$libdir/libcore-*.rlib" >/dev/null
}

# Makes no_std targets buildable and sets EMBEDDED_CARGO (a command prefix)
# and EMBEDDED_FLAGS. Route 1: rustup's prebuilt targets. Route 2: Debian's
# rustc-web with -Zbuild-std=core.
setup_embedded_toolchain() {
    local targets=("$@") missing=()
    if [ -z "${DINAH_FORCE_DEBIAN_TOOLCHAIN:-}" ]; then
        for t in "${targets[@]}"; do
            has_target_core "$t" || missing+=("$t")
        done
        if [ ${#missing[@]} -gt 0 ]; then
            echo "installing rustup targets: ${missing[*]} (up to two minutes)"
            timeout 120 rustup target add "${missing[@]}" >/dev/null 2>&1 || true
        fi
        missing=()
        for t in "${targets[@]}"; do
            has_target_core "$t" || missing+=("$t")
        done
        if [ ${#missing[@]} -eq 0 ]; then
            # shellcheck disable=SC2034  # both read by the scripts that source this file
            EMBEDDED_CARGO=(cargo)
            EMBEDDED_FLAGS=()
            echo "embedded toolchain: rustup targets (${targets[*]})"
            return
        fi
        echo "rustup could not provide: ${missing[*]}; falling back to Debian's toolchain"
    fi
    if ! [ -x /usr/bin/rustc ] || ! [ -d /usr/lib/rustlib/src/rust/library/core ] || ! command -v ld.lld-22 >/dev/null; then
        apt_install rustc-web cargo-web rust-web-src lld-22
    fi
    # Debian's rustc has no rust-lld of its own: link no_std binaries with lld-22.
    local linker_vars=()
    for t in "${targets[@]}"; do
        local var
        var="CARGO_TARGET_$(echo "$t" | tr 'a-z-' 'A-Z_')_LINKER=ld.lld-22"
        linker_vars+=("$var")
    done
    # shellcheck disable=SC2034  # both read by the scripts that source this file
    EMBEDDED_CARGO=(env PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 "${linker_vars[@]}" /usr/bin/cargo)
    # shellcheck disable=SC2034
    EMBEDDED_FLAGS=(-Zbuild-std=core)
    echo "embedded toolchain: Debian $(/usr/bin/rustc --version) with -Zbuild-std=core"
}

# Sums cargo's "test result" lines in log $1, prints "$2: N passed, N failed"
# and keeps the counts for ci/test.sh's closing line.
record_test_counts() {
    local log="$1" name="$2" passed failed
    passed=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
    failed=$(grep -Eo '^test result: .* [0-9]+ failed' "$log" | grep -Eo '[0-9]+ failed' | awk '{s += $1} END {print s + 0}')
    echo "$name: $passed passed, $failed failed"
    mkdir -p target
    echo "$passed $failed" >"target/ci-counts-$name"
}
