#!/usr/bin/env bash
# The load benchmark of the gateway against HAProxy (with jwt_verify) and nginx, in one run,
# on loopback, with the comparison kit in $SHARED_BENCH (copied, never modified). On a Debian machine:
#
#   scripts/benchmark.sh            # ~15 minutes: the matrix below
#   scripts/benchmark.sh --soak     # + a 5-minute soak at full load (RSS at start and end)
#   scripts/benchmark.sh --alone    # only steps 4 and 5 (and --soak), ~2 minutes
#
# What it runs (each target pinned like the anchors: wrk + backend on CPU 0, proxy on CPU 1):
#   1. compare.sh --alg RS256: GET /, GET /16k, POST 64 KiB at 64 and 256 connections, repeated
#      token; the gateway with one event-loop thread.
#   2. compare.sh --alg ES256: the same with ES256 tokens (reference: HAProxy + ES256).
#   3. compare.sh with a unique token per request (20 000 distinct tokens, cycled; the gateway's
#      verified-token cache is set to 1 000 entries, so every request pays a signature check).
#   3b. h2compare.sh: HTTP/2 (h2c prior knowledge) with h2load, 16 connections x 16 streams,
#      repeated RS256 token, against HAProxy h2 plain and h2 + jwt_verify.
#   3c. compare.sh --alg RS256 -c 64 with `tracing` on at sampleRatio 0.0 (collector unused):
#      the cost of having tracing configured, against the run of step 1.
#   4. Scaling: the gateway alone with 1 thread (CPU 1) and 2 threads (CPUs 0-1), req/s and CPU
#      time per request.
#   5. Memory: RSS after start, RSS holding 10 000 idle keep-alive connections.
# Results: .bench-work/results-<timestamp>/ (summary.md of each compare run, and report.md).
# Stops only the processes it started.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED_BENCH=${SHARED_BENCH:-$ROOT/../shared/bench}
WORK=$ROOT/.bench-work
SOAK=0
ALONE=0
for argument in "$@"; do
  case $argument in
    --soak) SOAK=1 ;;
    --alone) ALONE=1 ;;
    *) echo "usage: $0 [--soak] [--alone]" >&2; exit 2 ;;
  esac
done
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# 1. Tools.
need=()
for tool in nginx haproxy wrk taskset curl python3 h2load; do command -v "$tool" >/dev/null || need+=("$tool"); done
if ((${#need[@]})); then
  log "installing: nginx haproxy wrk nghttp2-client"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx haproxy wrk nghttp2-client >/dev/null
fi
python3 -c 'import cryptography, joserfc' 2>/dev/null || pip install -q cryptography joserfc

# 2. The gateway, release build.
log "building the release binary"
(cd "$ROOT" && swift build -c release --product auth-gateway >/dev/null)
GATEWAY=$ROOT/.build/release/auth-gateway

# 3. A private copy of the harness, keys and token lists.
rm -rf "$WORK/bench" && mkdir -p "$WORK" && cp -r "$SHARED_BENCH" "$WORK/bench"
rm -rf "$WORK/bench/results" "$WORK/bench/run"
cp "$ROOT/scripts/bench/tokens.lua" "$WORK/bench/wrk/auth.lua"
BENCH=$WORK/bench
python3 "$BENCH/make_keys.py" --quiet
OUT=$WORK/results-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
log "making unique-token lists"
python3 "$ROOT/scripts/bench/make_tokens.py" "$BENCH/keys" RS256 20000 "$WORK/tokens-rs256.txt"
python3 "$ROOT/scripts/bench/make_tokens.py" "$BENCH/keys" ES256 20000 "$WORK/tokens-es256.txt"

config() { # THREADS CACHE_ENTRIES [EXTRA_TOP_LEVEL_JSON] > file
  cat <<JSON
{
  ${3:-}
  "listener": { "host": "127.0.0.1", "port": 18090 },
  "eventLoopThreads": $1,
  "limits": { "maxConnections": 20000 },
  "tokens": {
    "sources": [ { "header": "Authorization", "schemes": ["Bearer"] } ],
    "verifiedCacheEntries": $2,
    "issuers": [ {
      "issuer": "https://auth.bench.local", "audiences": ["bench-gateway"], "leewaySeconds": 0,
      "keys": [ { "kid": "bench-rs256", "algorithm": "RS256", "publicKeyPEMFile": "$BENCH/keys/rs256-public.pem" },
                { "kid": "bench-es256", "algorithm": "ES256", "publicKeyPEMFile": "$BENCH/keys/es256-public.pem" } ]
    } ]
  },
  "backends": { "bench": { "urls": ["http://127.0.0.1:18080"], "maxConnectionsPerThread": 512 } },
  "routes": [ { "name": "all", "pathPrefix": "/", "backend": "bench" } ],
  "logging": { "level": "warning", "accessLog": false }
}
JSON
}
config 1 100000 >"$WORK/gateway-1.json"
config 2 100000 >"$WORK/gateway-2.json"
config 1 1000 >"$WORK/gateway-unique.json"
# Tracing configured, nothing sampled: a collector that is never reached.
config 1 100000 '"tracing": { "otlpEndpoint": "http://127.0.0.1:4318", "sampleRatio": 0.0 },' >"$WORK/gateway-tracing0.json"
"$GATEWAY" check --config "$WORK/gateway-1.json" >/dev/null

compare() { # NAME CONFIG [compare.sh options...]
  local name=$1 cfg=$2; shift 2
  log "compare.sh: $name"
  (cd "$BENCH" && ./compare.sh "$@" --gw-cmd "$GATEWAY serve --config $cfg" --out "$OUT/$name" gateway=127.0.0.1:18090) >"$OUT/$name.log" 2>&1 || log "compare $name failed: see $OUT/$name.log"
}
if ((!ALONE)); then
  compare rs256-repeated "$WORK/gateway-1.json" --alg RS256
  compare es256-repeated "$WORK/gateway-1.json" --alg ES256
  BENCH_TOKENS_FILE=$WORK/tokens-rs256.txt BENCH_TOKENS_FILE_ES256=$WORK/tokens-es256.txt \
    compare rs256-unique "$WORK/gateway-unique.json" --alg RS256 -c 64
  log "h2compare.sh"
  (cd "$BENCH" && ./h2compare.sh --gw-cmd "$GATEWAY serve --config $WORK/gateway-1.json" gateway=127.0.0.1:18090) >"$OUT/h2.log" 2>&1 || log "h2compare failed: see $OUT/h2.log"
  compare rs256-tracing-ratio0 "$WORK/gateway-tracing0.json" --alg RS256 -c 64
fi

# 4 and 5: the gateway alone, with the backend nginx of the harness.
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p "$BENCH/run/logs" "$BENCH/run/tmp/backend"
taskset -c 0 nginx -p "$BENCH/" -c "$BENCH/conf/backend.nginx.conf" -e "$BENCH/run/logs/backend.err" -g 'daemon off;' </dev/null >/dev/null 2>&1 &
PIDS+=($!)
sleep 1
TOKEN=$BENCH/keys/tokens/valid-rs256.jwt
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
start_gateway() { # CPUS CONFIG -> GW_PID
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true   # 10 000 idle connections need the fds
  taskset -c "$1" "$GATEWAY" serve --config "$2" </dev/null >"$OUT/gateway-alone.log" 2>&1 &
  GW_PID=$!
  PIDS+=("$GW_PID")
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:18090/livez" && return 0; sleep 0.05; done
  log "gateway did not start"; return 1
}
stop_gateway() { kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; }
measure() { # LABEL -> prints "rps cpu_seconds"
  local before after out
  before=$(cpu_ticks "$GW_PID")
  out=$(BENCH_TOKEN_FILE=$TOKEN timeout 30 taskset -c 0 wrk -t1 -c256 -d10s -s "$BENCH/wrk/auth.lua" http://127.0.0.1:18090/ | sed -n 's/^BENCHJSON //p')
  after=$(cpu_ticks "$GW_PID")
  echo "$(sed -n 's/.*"rps":\([0-9.]*\).*/\1/p' <<<"$out") $(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", t/hz}')"
}
{
  echo "# Gateway alone (scaling and memory), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  start_gateway 1 "$WORK/gateway-1.json"
  echo "- RSS after start (1 thread): $(rss_kib "$GW_PID") KiB"
  read -r rps1 cpu1 <<<"$(measure one)"
  echo "- 1 thread on CPU 1: $rps1 req/s, $cpu1 CPU-s in 10 s ($(awk -v r="$rps1" -v c="$cpu1" 'BEGIN{printf "%.1f", c/(r*10)*1e6}') µs CPU per request)"
  stop_gateway
  start_gateway 0,1 "$WORK/gateway-2.json"
  read -r rps2 cpu2 <<<"$(measure two)"
  echo "- 2 threads on CPUs 0-1 (sharing CPU 0 with wrk and the backend): $rps2 req/s, $cpu2 CPU-s in 10 s ($(awk -v r="$rps2" -v c="$cpu2" 'BEGIN{printf "%.1f", c/(r*10)*1e6}') µs CPU per request)"
  echo "- scaling: $(awk -v a="$rps1" -v b="$rps2" 'BEGIN{printf "%.2f", b/a}')x req/s; CPU per request 2 threads / 1 thread: $(awk -v a="$rps1" -v b="$rps2" -v c="$cpu1" -v d="$cpu2" 'BEGIN{printf "%.2f", (d/b)/(c/a)}') (1.00 = no contention between loops)"
  stop_gateway
  start_gateway 1 "$WORK/gateway-1.json"
  exec 7> >(python3 "$ROOT/scripts/bench/idle_connections.py" 18090 10000 "$TOKEN" >"$OUT/idle.log" 2>&1)
  for _ in $(seq 600); do grep -q ready "$OUT/idle.log" 2>/dev/null && break; sleep 0.1; done
  echo "- idle keep-alive connections: $(cat "$OUT/idle.log"); RSS: $(rss_kib "$GW_PID") KiB"
  exec 7>&-
  sleep 1
  if ((SOAK)); then
    echo "- soak: RSS before: $(rss_kib "$GW_PID") KiB"
    BENCH_TOKEN_FILE=$TOKEN timeout 330 taskset -c 0 wrk -t1 -c256 -d300s -s "$BENCH/wrk/auth.lua" http://127.0.0.1:18090/ | grep -E "Requests/sec|BENCHJSON" | sed 's/^/  /'
    echo "- soak: RSS after 5 minutes at full load: $(rss_kib "$GW_PID") KiB"
  fi
  stop_gateway
} | tee "$OUT/report.md"
for f in "$OUT"/*/summary.md; do
  [[ -e $f ]] || continue
  echo; echo "## $(basename "$(dirname "$f")")"; cat "$f"
done | tee -a "$OUT/report.md"
if [[ -f $OUT/h2.log ]]; then
  { echo; echo "## h2 (h2compare.sh)"; sed -n '/^| target/,$p' "$OUT/h2.log"; } | tee -a "$OUT/report.md"
fi
log "results: $OUT"
