#!/usr/bin/env bash
# What two event loops share on the request path (docs/benchmarks.md, "Between threads"): the
# release gateway with eventLoopThreads 2 under steady h2load, counting glibc's
# pthread_mutex_lock (a perf uprobe) and futex system calls, per request.
#   scripts/bench/thread-locks.sh [--h2] [--rate-limit]
#   --h2: 16 x 16 h2c streams instead of 64 HTTP/1.1 connections
#   --rate-limit: a client.ip rate limit (one client address) on every request
# CALLERS=1 records the locks' call stacks instead (perf record -g; prints the top callers).
# Needs perf (root, for the uprobe), nginx, h2load, a prepared bench copy (scripts/bench/features.sh
# makes one in .bench-work/bench) and the release binary (GATEWAY=path overrides).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
MODE=h1
LIMIT=0
for argument in "$@"; do
    case $argument in
        --h2) MODE=h2 ;;
        --rate-limit) LIMIT=1 ;;
        *) echo "unknown argument $argument" >&2; exit 2 ;;
    esac
done
[ -d "$BENCH/keys" ] || { echo "no bench copy at $BENCH: run scripts/bench/features.sh once" >&2; exit 1; }
OUT=$ROOT/.bench-work/thread-locks-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT" "$BENCH/run/logs"
source "$ROOT/scripts/bench/gateway-config.sh"
write_bench_gateway_config "$BENCH" "$OUT/base.json"
python3 - "$OUT/base.json" "$OUT/gateway.json" "$LIMIT" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["eventLoopThreads"] = 2
if sys.argv[3] == "1":
    config["trustedProxies"] = ["127.0.0.1/32"]
    config["rateLimits"] = [{"name": "per-client", "key": "client.ip", "requestsPerSecond": 1e9,
                             "burst": 1000000000, "maxKeys": 1000}]
json.dump(config, open(sys.argv[2], "w"))
PY
LIBC=$(ldd "$GATEWAY" | grep -o '/[^ ]*libc\.so\.6')
perf probe -q -x "$LIBC" pthread_mutex_lock 2>/dev/null || true  # already there: fine
TOKEN=$(cat "$BENCH/keys/tokens/valid-rs256.jwt")
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
start_bench_backend "$BENCH" "$OUT/backend.error.log"
"$GATEWAY" serve --config "$OUT/gateway.json" >"$OUT/gateway.log" 2>&1 &
gw=$!
pids+=($gw)
wait_for_200 "$TOKEN" 18090
if [ "$MODE" = h2 ]; then load=(-c 16 -m 16); else load=(--h1 -c 64 -m 1); fi
headers=(-H "authorization: Bearer $TOKEN")
[ "$LIMIT" = 1 ] && headers+=(-H "x-forwarded-for: 203.0.113.9")
timeout 30 h2load -D 3 "${load[@]}" -t 1 "${headers[@]}" http://127.0.0.1:18090/ >/dev/null 2>&1
if [ -n "${CALLERS:-}" ]; then
    perf record -e probe_libc:pthread_mutex_lock -g -p "$gw" -o "$OUT/locks.data" -- sleep 8 2>/dev/null &
else
    perf stat -x, -e probe_libc:pthread_mutex_lock,syscalls:sys_enter_futex -p "$gw" -o "$OUT/stat.txt" -- sleep 8 &
fi
perfpid=$!
timeout 40 h2load -D 8 "${load[@]}" -t 1 "${headers[@]}" http://127.0.0.1:18090/ >"$OUT/h2load.txt" 2>&1 || true
wait "$perfpid" || true
requests=$(grep -oE 'requests: [0-9]+ total' "$OUT/h2load.txt" | tr -dc 0-9)
grep -E "^status codes" "$OUT/h2load.txt"
if [ -n "${CALLERS:-}" ]; then
    perf report -i "$OUT/locks.data" --children --sort symbol --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -25
else
    awk -F, -v r="$requests" '/^[0-9]/ { printf "%-32s %10s  %.4f per request\n", $3, $1, $1 / r }' "$OUT/stat.txt"
fi
echo "$requests requests; $OUT"
