#!/usr/bin/env bash
# What a feature costs the gateway per request: the CPU time of the gateway process alone
# (`perf stat -e task-clock`; this VM has no hardware cycle counters) divided by the requests
# served — steadier than req/s on a small machine, whose run-to-run noise is as large as the
# effects to measure. For each configuration, in turn,
# REPS times (alternating): the release gateway on CPU 1, the bench's nginx backend and wrk
# (-c64, GET /, the bench's RS256 token) on CPU 0; 2 s warm-up, then DURATION s counted.
# -2: h2c instead, h2load with 16 connections x 16 streams (no wrk script then).
#   scripts/bench/cpu-by-config.sh [-r REPS] [-d DURATION] [-2] NAME=CONFIG.json[@WRK_SCRIPT.lua][^BINARY] ...
# A configuration may name its own gateway binary after `^` (NAME=CONFIG.json^/path/auth-gateway:
# an old build against a new one, alternated) and its own wrk script after `@` (e.g.
# scripts/bench/dpop.lua); the warm-up runs
# with BENCH_PHASE=warmup, the counted run with BENCH_PHASE=measure. Non-2xx answers are
# counted and printed: a run that is not all 2xx measures something else.
# Prints one line per run and a median per configuration, and each median's ratio to the
# first configuration's. Needs perf, wrk, nginx, the release binary and the bench copy that
# scripts/bench/features.sh makes (.bench-work/bench). Stops only what it started.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
REPS=3
DURATION=6
H2=""
while getopts "r:d:2" option; do
  case $option in r) REPS=$OPTARG ;; d) DURATION=$OPTARG ;; 2) H2=1 ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r REPS] [-d DURATION] [-2] NAME=CONFIG.json ..." >&2; exit 2; }
[ -d "$BENCH/keys" ] || { echo "no bench copy at $BENCH: run scripts/bench/features.sh once" >&2; exit 1; }
OUT=$(mktemp -d)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT
mkdir -p "$BENCH/run/logs" "$BENCH/run/tmp/backend"
taskset -c 0 nginx -p "$BENCH/" -c "$BENCH/conf/backend.nginx.conf" -e "$OUT/backend.err" -g 'daemon off;' </dev/null >/dev/null 2>&1 &
PIDS+=($!)
export BENCH_TOKEN_FILE=$BENCH/keys/tokens/valid-rs256.jwt
# With BENCH_TOKENS_FILE (one JWT per line, scripts/bench/make_tokens.py) every request takes
# the next token of the file (scripts/bench/tokens.lua) instead of the one bench token.
SCRIPT=$BENCH/wrk/auth.lua
if [ -n "${BENCH_TOKENS_FILE:-}" ]; then SCRIPT=$ROOT/scripts/bench/tokens.lua; export BENCH_TOKENS_FILE; fi
declare -A results
for rep in $(seq "$REPS"); do
  for spec in "$@"; do
    name=${spec%%=*}
    config=${spec#*=}
    script=$SCRIPT
    binary=$GATEWAY
    if [[ $config == *^* ]]; then binary=${config#*^}; config=${config%^*}; fi
    if [[ $config == *@* ]]; then script=${config#*@}; config=${config%@*}; fi
    taskset -c 1 "$binary" serve --config "$config" >"$OUT/$name.log" 2>&1 &
    gateway=$!
    for _ in $(seq 100); do curl -sf -o /dev/null -H "Authorization: Bearer $(cat "$BENCH_TOKEN_FILE")" http://127.0.0.1:18090/ && break; sleep 0.1; done
    if [ -n "$H2" ]; then
      # h2c: 16 connections x 16 streams, the bench's token (no wrk script: h2load has none).
      h2=(h2load -t1 -c16 -m16 -H "authorization: Bearer $(cat "$BENCH_TOKEN_FILE")")
      timeout 20 taskset -c 0 "${h2[@]}" -D 2 http://127.0.0.1:18090/ >/dev/null 2>&1
      perf stat -x, -e task-clock -p "$gateway" -o "$OUT/stat" -- sleep "$DURATION" &
      stat=$!
      timeout $((DURATION + 20)) taskset -c 0 "${h2[@]}" -D "$DURATION" http://127.0.0.1:18090/ >"$OUT/h2load.txt" 2>&1 || true
      requests=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$OUT/h2load.txt")
      non2xx=$(awk '/^status codes:/ {print $5 + $7 + $9}' "$OUT/h2load.txt")
    else
      BENCH_PHASE=warmup timeout 20 taskset -c 0 wrk -t1 -c64 -d2s -s "$script" http://127.0.0.1:18090/ >/dev/null
      perf stat -x, -e task-clock -p "$gateway" -o "$OUT/stat" -- sleep "$DURATION" &
      stat=$!
      BENCH_PHASE=measure timeout $((DURATION + 20)) taskset -c 0 wrk -t1 -c64 -d"${DURATION}s" -s "$script" http://127.0.0.1:18090/ >"$OUT/wrk.txt"
      requests=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$OUT/wrk.txt")
      non2xx=$(sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$OUT/wrk.txt")
    fi
    wait "$stat" || true
    kill "$gateway"; wait "$gateway" 2>/dev/null || true
    milliseconds=$(awk -F, '$3 ~ /^task-clock/ {print $1}' "$OUT/stat")
    # CPU nanoseconds per request.
    per=$(awk -v ms="$milliseconds" -v n="$requests" 'BEGIN {printf "%d", ms * 1000000 / n}')
    printf '%s rep %s: %s requests (%s/s, non-2xx %s), %s ns of gateway CPU per request\n' "$name" "$rep" "$requests" "$(( requests / DURATION ))" "${non2xx:-0}" "$per"
    results[$name]="${results[$name]:-} $per"
  done
done
first=""
for spec in "$@"; do
  name=${spec%%=*}
  median=$(tr ' ' '\n' <<<"${results[$name]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  [ -n "$first" ] || first=$median
  printf 'median %s: %s ns CPU/request (%s x %s)\n' "$name" "$median" "$(awk -v a="$median" -v b="$first" 'BEGIN {printf "%.3f", a/b}')" "${1%%=*}"
done
