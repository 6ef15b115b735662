#!/usr/bin/env bash
# Cargo runner: runs a firmware ELF on the QEMU board for its target, decodes
# its defmt output, and exits with the firmware's semihosting exit status.
# A firmware that hangs is killed after ${QEMU_TIMEOUT:-60} s (status 124).
# It runs under -icount shift=0,sleep=off unless QEMU_REALTIME=1.
set -euo pipefail
elf="$1"
case "$elf" in
    *thumbv6m-none-eabi*) board=(-machine microbit -cpu cortex-m0) ;;
    *thumbv7m-none-eabi*) board=(-machine lm3s6965evb -cpu cortex-m3) ;;
    *) echo "run.sh: no QEMU board known for $elf" >&2; exit 2 ;;
esac
decode=(cat)
if [ -z "${DINAH_NO_DEFMT_DECODE:-}" ]; then
    decode=(defmt-print -e "$elf" --log-format '{L} {s}')
fi
# -icount: one instruction per nanosecond of virtual time, so SysTick counts
# instructions (dinah-qemu-wake-cost measures with it), fires at the same
# instruction in every run whatever the host is doing (a stall of the host
# cannot make a short poll look long to dinah-qemu-watchdog), and WFI jumps
# to the next timer event instead of waiting (dinah-qemu-timers). Every
# firmware here logs the same lines in every run this way. QEMU_REALTIME=1
# runs against the host's clock instead.
[ "${QEMU_REALTIME:-}" = 1 ] || board+=(-icount "shift=0,sleep=off")
timeout "${QEMU_TIMEOUT:-60}" qemu-system-arm "${board[@]}" -nographic \
    -semihosting-config enable=on,target=native -kernel "$elf" 2> >(grep -v 'Timer with period zero' >&2) \
    | "${decode[@]}"
