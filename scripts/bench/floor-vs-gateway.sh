#!/usr/bin/env bash
# The gateway against its floor in one run (docs/benchmarks.md; issue target: gateway ÷ floor
# ≥ 0.6× over h2c). `Benchmarks/NIOFloor` (SwiftNIO and NIOHTTP2 alone, every request answered
# at once, no backend) and the release gateway (the bench's nginx backend behind it, the bench
# RS256 token, its verification cached) both run on CPU 1; h2load and the backend on CPU 0, as
# the comparison kit pins them. Only one of the two is loaded at a time: ROUNDS interleaved
# rounds of DURATION seconds, h2c (16 connections × 16 streams) and HTTP/1.1 (h2load --h1, 64
# connections) for each. (The floor checks `authorization` byte for byte, name lower-case, as h2load sends it.) Prints each round and the ratios of the medians.
# Uses the bench copy in .bench-work/bench (scripts/bench/features.sh makes one).
#   scripts/bench/floor-vs-gateway.sh            (ROUNDS=3 DURATION=5 by default)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
source "$ROOT/scripts/bench/gateway-config.sh"
require_bench "$BENCH" h2load nginx taskset
swift build -c release --package-path "$ROOT/Benchmarks/NIOFloor" >&2
FLOOR=$ROOT/Benchmarks/NIOFloor/.build/release/nio-floor
TOKEN=$(cat "$BENCH/keys/tokens/valid-rs256.jwt")
WORK=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
write_bench_gateway_config "$BENCH" "$WORK/gateway.json"
start_bench_backend "$BENCH" "$WORK/backend.error.log"
taskset -c 1 "$FLOOR" 18095 "$BENCH/keys/tokens/valid-rs256.jwt" >"$WORK/floor.log" 2>&1 &
pids+=($!)
taskset -c 1 "$GATEWAY" serve --config "$WORK/gateway.json" >"$WORK/gateway.log" 2>&1 &
pids+=($!)
wait_for_200 "$TOKEN" 18080 18095 18090
load() { # PORT h2|h1 -> req/s (every answer must be 2xx)
    local args=(-c 16 -m 16)
    [ "$2" = h1 ] && args=(--h1 -c 64 -m 1)
    local out
    out=$(timeout $((DURATION + 30)) taskset -c 0 h2load -D "$DURATION" --warm-up-time=1 "${args[@]}" -t 1 \
        -H "authorization: Bearer $TOKEN" "http://127.0.0.1:$1/" 2>&1)
    local total ok
    total=$(sed -n 's/^requests: \([0-9]*\) total.*/\1/p' <<<"$out")
    ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' <<<"$out")
    [ "$total" = "$ok" ] || { echo "127.0.0.1:$1 ($2): $ok 2xx of $total" >&2; exit 1; }
    sed -n 's/^finished in .* \([0-9.]*\) req\/s.*/\1/p' <<<"$out"
}
results=()
for round in $(seq "$ROUNDS"); do
    line=""
    for target in floor-h2:18095:h2 gateway-h2:18090:h2 floor-h1:18095:h1 gateway-h1:18090:h1; do
        IFS=: read -r name port framing <<<"$target"
        rate=$(load "$port" "$framing")
        results+=("$name $rate")
        line+="$name $rate  "
    done
    echo "round $round: $line"
done
python3 - "${results[@]}" <<'PY'
import statistics, sys
rates = {}
for item in sys.argv[1:]:
    name, rate = item.split()
    rates.setdefault(name, []).append(float(rate))
median = {name: statistics.median(values) for name, values in rates.items()}
for name in ("floor-h2", "gateway-h2", "floor-h1", "gateway-h1"):
    print(f"{name}: median {median[name]:.0f} req/s ({1e6 / median[name]:.1f} µs per request on its core)")
print(f"gateway ÷ floor: h2c {median['gateway-h2'] / median['floor-h2']:.2f}× (target ≥ 0.6×), "
      f"HTTP/1.1 {median['gateway-h1'] / median['floor-h1']:.2f}×")
PY
