#!/usr/bin/env bash
# Where an HTTP/2 stream's time goes: the release gateway on CPU 1 under `perf record`, the
# bench's nginx backend and h2load (16 connections x 16 streams, the bench's RS256 token) on
# CPU 0, for DURATION seconds (default 10). Prints the top of `perf report` (self time, by
# symbol). Needs perf, nginx, h2load and a prepared bench copy (scripts/bench/features.sh makes
# one in .bench-work/bench) and the release binary.
#   scripts/bench/profile-h2.sh [DURATION] [--h1]   (--h1: the same load over HTTP/1.1, 64 connections)
# CONFIG=<file> loads another gateway configuration (listening on 127.0.0.1:18090, one thread).
# EVENT=probe_libc:malloc (after `perf probe -x <libc> malloc`) records who allocates instead.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
DURATION=${1:-10}
MODE=${2:-}
OUT=$ROOT/.bench-work/profile-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT" "$BENCH/run/logs"
[ -d "$BENCH/keys" ] || { echo "no bench copy at $BENCH: run scripts/bench/features.sh once" >&2; exit 1; }
source "$ROOT/scripts/bench/gateway-config.sh"
if [ -n "${CONFIG:-}" ]; then cp "$CONFIG" "$OUT/gateway.json"; else write_bench_gateway_config "$BENCH" "$OUT/gateway.json"; fi
TOKEN=$(cat "$BENCH/keys/tokens/valid-rs256.jwt")
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
start_bench_backend "$BENCH" "$OUT/backend.error.log"
taskset -c 1 "$GATEWAY" serve --config "$OUT/gateway.json" >"$OUT/gateway.log" 2>&1 &
gw=$!
pids+=($gw)
wait_for_200 "$TOKEN" 18090
if [ "$MODE" = --h1 ]; then load=(--h1 -c 64 -m 1); else load=(-c 16 -m 16); fi
# Warm up, then profile a steady load.
timeout 30 taskset -c 0 h2load -D 2 "${load[@]}" -t 1 -H "authorization: Bearer $TOKEN" http://127.0.0.1:18090/ >/dev/null 2>&1
if [ -n "${EVENT:-}" ]; then sampling=(-e "$EVENT" -c 1); else sampling=(-F 999); fi
perf record "${sampling[@]}" -g -p "$gw" -o "$OUT/perf.data" -- sleep "$DURATION" 2>/dev/null &
perfpid=$!
timeout $((DURATION + 30)) taskset -c 0 h2load -D "$DURATION" "${load[@]}" -t 1 -H "authorization: Bearer $TOKEN" http://127.0.0.1:18090/ >"$OUT/h2load.txt" 2>&1 || true
wait "$perfpid" || true
grep -E "^finished|^requests:|^status codes" "$OUT/h2load.txt"
perf report -i "$OUT/perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -${TOP:-60} | tee "$OUT/report.txt"
echo "profile: $OUT"
