#!/usr/bin/env bash
# The one command that checks everything CI checks. It installs what it needs
# on a fresh Debian machine that has only rustup's stable toolchain.
#
#   ./ci/test.sh            everything
#   ./ci/test.sh lint       one part: lint, host-tests, loom, miri, tsan, fuzz, msrv,
#                           embedded, firmware, footprint, bench-build
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

parts=(lint host-tests loom miri tsan fuzz msrv embedded firmware footprint bench-build)
[ $# -gt 0 ] && parts=("$@")

rm -f target/ci-counts-*
started=$SECONDS
for part in "${parts[@]}"; do
    case "$part" in
        bench-build)
            step "cargo bench --no-run (benchmarks must keep compiling)"
            cargo bench --no-run
            ;;
        *)
            bash "ci/$part.sh"
            ;;
    esac
    echo "ci: $part done at $((SECONDS - started)) s"
done
echo "ci: all parts passed (${parts[*]}) in $((SECONDS - started)) s"
passed=0
failed=0
for counts in target/ci-counts-*; do
    if [ -f "$counts" ]; then
        read -r p f <"$counts"
        passed=$((passed + p))
        failed=$((failed + f))
    fi
done
echo "tests: $passed passed, $failed failed"
