#!/usr/bin/env bash
# HTTP/1.1 proxying: HAProxy's plain proxy, the two SwiftNIO proxy floors and the gateway in one
# interleaved run (docs/benchmarks.md, "The proxy floor"; issue target: gateway ÷ HAProxy plain
# ≥ 0.9×). `Benchmarks/NIOFloor`'s `nio-relay-floor` is the least a SwiftNIO proxy does per
# request (a byte relay of each head to its own backend connection, no parsing);
# `nio-lean-proxy-floor` the least an authenticating one does (head and response head checked
# and rewritten on their bytes, a token memo hit: "the lean proxy floor"). Each of the
# four runs alone on CPU 1 (wrk and the bench's nginx backend on CPU 0, as compare.sh pins
# them), GET / with the bench RS256 token, 64 connections; ROUNDS rounds of DURATION seconds,
# alternated. Prints req/s and the process's user and system CPU per request (from /proc), the
# medians, and the ratios to HAProxy plain. Every answer must be a 200.
# Uses the bench copy in .bench-work/bench (scripts/bench/features.sh makes one).
#   scripts/bench/proxy-floor.sh            (ROUNDS=3 DURATION=6 by default)
# LEAN=<binary> runs another build of the lean floor (e.g. one built with
# `-Xswiftc -enforce-exclusivity=unchecked`); GATEWAY=<binary> another gateway build.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-6}
source "$ROOT/scripts/bench/gateway-config.sh"
require_bench "$BENCH" wrk nginx haproxy taskset curl
swift build -c release --package-path "$ROOT/Benchmarks/NIOFloor" >&2
RELAY=$ROOT/Benchmarks/NIOFloor/.build/release/nio-relay-floor
LEAN=${LEAN:-$ROOT/Benchmarks/NIOFloor/.build/release/nio-lean-proxy-floor}
TOKEN=$(cat "$BENCH/keys/tokens/valid-rs256.jwt")
WORK=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
write_bench_gateway_config "$BENCH" "$WORK/gateway.json"
start_bench_backend "$BENCH" "$WORK/backend.error.log"
(cd "$BENCH" && BENCH_DIR=$BENCH exec taskset -c 1 haproxy -f "$BENCH/conf/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1) &
pids+=($!)
declare -A PID_OF=([haproxy]=$!)
taskset -c 1 "$RELAY" 18096 18080 "$BENCH/keys/tokens/valid-rs256.jwt" >"$WORK/relay.log" 2>&1 &
pids+=($!)
PID_OF[relay-floor]=$!
taskset -c 1 "$LEAN" 18097 18080 "$BENCH/keys/tokens/valid-rs256.jwt" >"$WORK/lean.log" 2>&1 &
pids+=($!)
PID_OF[lean-floor]=$!
taskset -c 1 "$GATEWAY" serve --config "$WORK/gateway.json" >"$WORK/gateway.log" 2>&1 &
pids+=($!)
PID_OF[gateway]=$!
wait_for_200 "$TOKEN" 18080 18082 18096 18097 18090
export BENCH_TOKEN_FILE=$BENCH/keys/tokens/valid-rs256.jwt
HZ=$(getconf CLK_TCK)
load() { # NAME PORT -> "req/s user-µs system-µs" (every answer must be a 200)
    local pid=${PID_OF[$1]} out u0 s0 u1 s1
    timeout 20 taskset -c 0 wrk -t1 -c64 -d1s -s "$BENCH/wrk/auth.lua" "http://127.0.0.1:$2/" >/dev/null
    read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
    out=$(timeout $((DURATION + 20)) taskset -c 0 wrk -t1 -c64 -d"${DURATION}s" -s "$BENCH/wrk/auth.lua" "http://127.0.0.1:$2/")
    read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
    grep -q '"err_status":0' <<<"$out" || { echo "$1: answers other than 200: $(grep BENCHJSON <<<"$out")" >&2; exit 1; }
    grep -q "Non-2xx\|Socket errors" <<<"$out" && { echo "$1: $(grep -E 'Non-2xx|Socket errors' <<<"$out")" >&2; exit 1; }
    local rps
    rps=$(sed -n 's/^Requests\/sec: *//p' <<<"$out")
    awk -v r="$rps" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$HZ" -v d="$DURATION" \
        'BEGIN{printf "%.0f %.2f %.2f", r, u/hz/(r*d)*1e6, s/hz/(r*d)*1e6}'
}
results=()
for round in $(seq "$ROUNDS"); do
    line=""
    for target in haproxy:18082 relay-floor:18096 lean-floor:18097 gateway:18090; do
        IFS=: read -r name port <<<"$target"
        measured=$(load "$name" "$port")
        results+=("$name $measured")
        line+="$name $measured  "
    done
    echo "round $round (req/s user-µs system-µs): $line"
done
python3 - "${results[@]}" <<'PY'
import statistics, sys
runs = {}
for item in sys.argv[1:]:
    name, rate, user, system = item.split()
    runs.setdefault(name, []).append((float(rate), float(user), float(system)))
median = {name: [statistics.median(column) for column in zip(*values)] for name, values in runs.items()}
base = median["haproxy"][0]
for name in ("haproxy", "relay-floor", "lean-floor", "gateway"):
    rate, user, system = median[name]
    print(f"{name:12} median {rate:8.0f} req/s  ({rate / base:.2f}× HAProxy plain)  "
          f"user {user:5.2f} µs  system {system:5.2f} µs per request")
print(f"gateway ÷ relay floor: {median['gateway'][0] / median['relay-floor'][0]:.2f}×; "
      f"gateway ÷ lean floor: {median['gateway'][0] / median['lean-floor'][0]:.2f}×")
PY
