#!/usr/bin/env bash
# hyper on dinah's LocalExecutor against hyper on tokio's current-thread
# runtime, both serving `benches/net.rs --serve`, driven by wrk from
# outside both (the same client for each), on loopback.
#
#   ./benches/http_wrk.sh [ROUNDS] [SECONDS]     default 5 rounds of 2 s
#
# Each round runs, for 1 and then 50 connections, dinah then tokio (the
# order alternates by round), and prints wrk's requests per second and the
# ratio dinah/tokio. Then one more run of each under `strace -c -f`
# counts the server's system calls per request (the process's whole life,
# start-up included, divided by the requests wrk completed).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "http_wrk: wrk is not installed (apt-get install -y wrk)" >&2; exit 1; }
rounds="${1:-5}"
seconds="${2:-2}"
bench=$(cargo bench --bench net --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "net":
        print(m["executable"])')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port/"

# Waits until the server accepts connections (at most 5 s).
await_server() {
    for _ in $(seq 50); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "http_wrk: no server on port $port" >&2
    exit 1
}

# One wrk run against CONTENDER with CONNECTIONS: prints requests/s.
rate() {
    local contender=$1 connections=$2
    "$bench" --serve "$contender" "127.0.0.1:$port" $((seconds + 10)) &
    local server=$!
    await_server
    wrk -t1 -c"$connections" -d"${seconds}s" "$url" >"$out/wrk" 2>&1
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    awk '/Requests\/sec/ {print $2}' "$out/wrk"
}

echo "bench binary: $bench; $rounds rounds of ${seconds} s; load $(cut -d' ' -f1-3 /proc/loadavg)"
for connections in 1 50; do
    for round in $(seq "$rounds"); do
        if [ $((round % 2)) -eq 1 ]; then
            d=$(rate dinah "$connections"); t=$(rate tokio "$connections")
        else
            t=$(rate tokio "$connections"); d=$(rate dinah "$connections")
        fi
        python3 -c "import sys; d, t = float(sys.argv[1]), float(sys.argv[2]); print(f'connections {sys.argv[3]} round {sys.argv[4]}: dinah {d:.0f} req/s, tokio {t:.0f} req/s, dinah/tokio {d / t:.3f}')" \
            "$d" "$t" "$connections" "$round"
    done
done

if command -v strace >/dev/null; then
    for connections in 1 50; do
        for contender in dinah tokio; do
            strace -c -f -o "$out/strace" "$bench" --serve "$contender" "127.0.0.1:$port" $((seconds + 2)) &
            server=$!
            await_server
            wrk -t1 -c"$connections" -d"${seconds}s" "$url" >"$out/wrk" 2>&1
            wait "$server" || true
            requests=$(awk '/requests in/ {print $1}' "$out/wrk")
            calls=$(awk '$NF == "total" {print $(NF-2)}' "$out/strace")
            python3 -c "import sys; c, r = int(sys.argv[1]), int(sys.argv[2]); print(f'system calls, {sys.argv[3]} at {sys.argv[4]} connections: {c} for {r} requests, {c / r:.2f} per request')" \
                "$calls" "$requests" "$contender" "$connections"
            grep -E "^ *[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9]* *(read|write|recvfrom|sendto|epoll_wait|accept4|futex|writev)" "$out/strace" \
                | awk '{printf "    %s %s\n", $NF, $4}' || true
        done
    done
fi
