#!/usr/bin/env bash
# This round's feature costs against the anchors, in one sitting (~15 minutes), on loopback,
# with the comparison kit in $SHARED_BENCH (copied, never modified):
#   1. compare.sh --alg RS256 -c 64, the plain configuration (the baseline of 2 and 3);
#   2. the same with a rate limit that admits everything (claims.sub, 1e6 requests/s): the cost
#      of rateLimits (docs/rate-limits.md; target ≤ 5 %);
#   3. the same with an active health check and outlier detection on the backend
#      (docs/forwarding.md; target within 3 %);
#   4. h2compare.sh --with-h1: HTTP/2 against HAProxy h2 + jwt_verify, and the same gateway over
#      HTTP/1.1 with the same tool (docs/http2.md, "Cost").
# Needs a release binary: swift build -c release --scratch-path .build-release --product auth-gateway
# (GATEWAY=path overrides). Results: .bench-work/features-<timestamp>/report.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHARED_BENCH=${SHARED_BENCH:-$ROOT/../shared/bench}
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
WORK=$ROOT/.bench-work
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
for tool in nginx haproxy wrk h2load taskset; do command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install nginx haproxy wrk nghttp2-client)" >&2; exit 1; }; done
[ -x "$GATEWAY" ] || { echo "no release binary at $GATEWAY" >&2; exit 1; }

rm -rf "$WORK/bench" && mkdir -p "$WORK" && cp -r "$SHARED_BENCH" "$WORK/bench" && chmod -R u+w "$WORK/bench"
rm -rf "$WORK/bench/results" "$WORK/bench/run"
BENCH=$WORK/bench
python3 "$BENCH/make_keys.py" --quiet
OUT=$WORK/features-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"

config() { # EXTRA_TOP_LEVEL_JSON BACKEND_EXTRA_JSON > file
  cat <<JSON
{
  ${1:-}
  "listener": { "host": "127.0.0.1", "port": 18090 },
  "eventLoopThreads": 1,
  "limits": { "maxConnections": 20000 },
  "tokens": {
    "sources": [ { "header": "Authorization", "schemes": ["Bearer"] } ],
    "issuers": [ {
      "issuer": "https://auth.bench.local", "audiences": ["bench-gateway"], "leewaySeconds": 0,
      "keys": [ { "kid": "bench-rs256", "algorithm": "RS256", "publicKeyPEMFile": "$BENCH/keys/rs256-public.pem" },
                { "kid": "bench-es256", "algorithm": "ES256", "publicKeyPEMFile": "$BENCH/keys/es256-public.pem" } ]
    } ]
  },
  "backends": { "bench": { "urls": ["http://127.0.0.1:18080"], "maxConnectionsPerThread": 512 ${2:-} } },
  "routes": [ { "name": "all", "pathPrefix": "/", "backend": "bench" } ],
  "logging": { "level": "warning", "accessLog": false }
}
JSON
}
config >"$OUT/base.json"
config '"rateLimits": [ { "name": "per-user", "key": "claims.sub", "requestsPerSecond": 1000000, "burst": 1000000 } ],' >"$OUT/ratelimit.json"
config '' ', "healthCheck": { "path": "/", "intervalSeconds": 1 }, "outlierDetection": { "consecutiveFailures": 5 }' >"$OUT/health.json"
for file in base ratelimit health; do "$GATEWAY" check --config "$OUT/$file.json" >/dev/null; done

for name in base ratelimit health; do
  log "compare.sh: $name"
  (cd "$BENCH" && ./compare.sh --alg RS256 -c 64 --gw-cmd "$GATEWAY serve --config $OUT/$name.json" --out "$OUT/$name" gateway=127.0.0.1:18090) >"$OUT/$name.log" 2>&1 || log "compare $name failed: see $OUT/$name.log"
done
log "h2compare.sh --with-h1"
(cd "$BENCH" && ./h2compare.sh --with-h1 --gw-cmd "$GATEWAY serve --config $OUT/base.json" gateway=127.0.0.1:18090) >"$OUT/h2.log" 2>&1 || log "h2compare failed: see $OUT/h2.log"

{
  echo "# Feature costs ($(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$ROOT" rev-parse --short HEAD))"
  for name in base ratelimit health; do echo; echo "## $name"; sed -n '/^| case/,/^(compare/p' "$OUT/$name.log"; grep -E "^(NOTE|WARN)" "$OUT/$name.log" || true; done
  echo; echo "## h2compare --with-h1"; sed -n '/^| target/,$p' "$OUT/h2.log"
} >"$OUT/report.md"
cat "$OUT/report.md"
