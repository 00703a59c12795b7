#!/usr/bin/env bash
# User and system CPU time per request of HAProxy as a plain proxy and of the gateway, GET /,
# 64 connections, 8 s each, pinned like compare.sh (wrk and the backend on CPU 0, the proxy on
# CPU 1). Uses the copy of the harness that scripts/benchmark.sh made (.bench-work/bench) and
# its gateway configuration: run scripts/benchmark.sh (or --alone) once first.
# Stops only the processes it started.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$ROOT/.bench-work
BENCH=$WORK/bench
[[ -f $WORK/gateway-1.json && -d $BENCH/keys ]] || { echo "run scripts/benchmark.sh first" >&2; exit 2; }
mkdir -p "$BENCH/run/logs" "$BENCH/run/tmp/backend"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
taskset -c 0 nginx -p "$BENCH/" -c "$BENCH/conf/backend.nginx.conf" -e "$BENCH/run/logs/backend.err" -g 'daemon off;' </dev/null >/dev/null 2>&1 &
PIDS+=($!)
(cd "$BENCH" && exec taskset -c 1 haproxy -f "$BENCH/conf/haproxy.cfg" -db >/dev/null 2>&1) &
PIDS+=($!)
HAPROXY=$!
taskset -c 1 "${GATEWAY_BINARY:-$ROOT/.build-release/release/auth-gateway}" serve --config "$WORK/gateway-1.json" >/dev/null 2>&1 &
PIDS+=($!)
GATEWAY=$!
sleep 2
export BENCH_TOKEN_FILE=$BENCH/keys/tokens/valid-rs256.jwt
measure() { # NAME PID PORT
  timeout 20 taskset -c 0 wrk -t1 -c64 -d1s -s "$BENCH/wrk/auth.lua" "http://127.0.0.1:$3/" >/dev/null
  read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$2/stat")
  local rps
  rps=$(timeout 30 taskset -c 0 wrk -t1 -c64 -d8s -s "$BENCH/wrk/auth.lua" "http://127.0.0.1:$3/" | sed -n 's/^Requests\/sec: *//p')
  read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$2/stat")
  awk -v n="$1" -v r="$rps" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN{printf "%-14s %8.0f req/s  user %5.1f µs  system %5.1f µs per request\n", n, r, u/hz/(r*8)*1e6, s/hz/(r*8)*1e6}'
}
measure haproxy-proxy "$HAPROXY" 18082
measure gateway "$GATEWAY" 18090
