#!/usr/bin/env bash
# Authorizer mode's cost (docs/authorizer.md, "Cost"), in one sitting on loopback (~1 minute with
# the defaults), with the comparison kit in $SHARED_BENCH's keys and backend (copied, never modified):
#   1. proxy   - h2load --h1 -> the gateway proxying to the backend nginx (GET /, RS256 token);
#   2. authz   - h2load --h1 -> nginx (auth_request to the gateway's auth-request endpoint,
#                then proxy_pass to the same backend): the gateway only decides;
#   3. check   - h2load (h2c) -> the gateway's gRPC Check, one prebuilt CheckRequest (made with
#                Python xds-protos) carrying the same token.
# For each: requests/s and the gateway's user+system CPU per request (/proc/<pid>/stat over the
# measured run), so a decision's CPU can be set against a proxied request's in the same run.
# DURATION (seconds, default 8), CONNECTIONS (default 64), GATEWAY (default the release binary
# .build-release/release/auth-gateway; build it with
#   swift build -c release --scratch-path .build-release --product auth-gateway).
# Stops only the processes it started. Results: .bench-work/authorizer-<timestamp>/report.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHARED_BENCH=${SHARED_BENCH:-$ROOT/../shared/bench}
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
DURATION=${DURATION:-8}
CONNECTIONS=${CONNECTIONS:-64}
WORK=$ROOT/.bench-work
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "missing nginx (apt-get install nginx)" >&2; exit 1; }
for tool in h2load taskset python3; do command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install nghttp2-client util-linux python3)" >&2; exit 1; }; done
python3 -c 'import envoy.service.auth.v3.external_auth_pb2' 2>/dev/null || { echo "missing Python xds-protos (pip install xds-protos)" >&2; exit 1; }
[ -x "$GATEWAY" ] || { echo "no gateway binary at $GATEWAY" >&2; exit 1; }

mkdir -p "$WORK"
OUT=$WORK/authorizer-$(date +%Y%m%d-%H%M%S)
BENCH=$OUT/bench
mkdir -p "$OUT"
cp -r "$SHARED_BENCH" "$BENCH" && chmod -R u+w "$BENCH" && rm -rf "$BENCH/results" "$BENCH/run"
mkdir -p "$BENCH/run/logs" "$BENCH/run/tmp/backend" "$OUT/front"
chmod 777 "$OUT/front"
python3 "$BENCH/make_keys.py" --quiet >/dev/null
TOKEN=$(cat "$BENCH/keys/tokens/valid-rs256.jwt")

cat >"$OUT/gateway.json" <<JSON
{
  "listener": { "host": "127.0.0.1", "port": 18090 },
  "eventLoopThreads": 1,
  "limits": { "maxConnections": 20000 },
  "tokens": {
    "sources": [ { "header": "Authorization", "schemes": ["Bearer"] } ],
    "issuers": [ {
      "issuer": "https://auth.bench.local", "audiences": ["bench-gateway"], "leewaySeconds": 0,
      "keys": [ { "kid": "bench-rs256", "algorithm": "RS256", "publicKeyPEMFile": "$BENCH/keys/rs256-public.pem" } ]
    } ]
  },
  "identityHeaders": { "X-User-Subject": "claims.sub" },
  "backends": { "bench": { "urls": ["http://127.0.0.1:18080"], "maxConnectionsPerThread": 512 } },
  "routes": [ { "name": "all", "pathPrefix": "/", "backend": "bench" } ],
  "authorizer": {},
  "logging": { "level": "warning", "accessLog": false }
}
JSON
"$GATEWAY" check --config "$OUT/gateway.json" >/dev/null

# The front nginx: docs/authorizer.md's auth_request block, on 18081, in front of the backend.
cat >"$OUT/front/nginx.conf" <<CONF
worker_processes 1;
pid $OUT/front/nginx.pid;
error_log $OUT/front/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 10000000;
    client_body_temp_path $OUT/front/body;
    proxy_temp_path $OUT/front/proxy;
    fastcgi_temp_path $OUT/front/fastcgi;
    uwsgi_temp_path $OUT/front/uwsgi;
    scgi_temp_path $OUT/front/scgi;
    upstream gateway { server 127.0.0.1:18090; keepalive 64; }
    upstream backend { server 127.0.0.1:18080; keepalive 64; }
    server {
        listen 127.0.0.1:18081 backlog=4096;
        location / {
            auth_request /.gateway/authz/auth-request;
            auth_request_set \$auth_subject \$upstream_http_x_user_subject;
            proxy_set_header X-User-Subject \$auth_subject;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://backend;
        }
        location = /.gateway/authz/auth-request {
            internal;
            proxy_pass http://gateway;
            proxy_http_version 1.1;
            proxy_pass_request_body off;
            proxy_set_header Connection "";
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-Method \$request_method;
            proxy_set_header X-Original-URI \$request_uri;
            proxy_set_header X-Forwarded-Host \$host;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Real-IP \$remote_addr;
        }
    }
}
CONF

python3 - "$TOKEN" "$OUT/check.bin" <<'PY'
import struct, sys
from envoy.service.auth.v3 import external_auth_pb2
check = external_auth_pb2.CheckRequest()
check.attributes.source.address.socket_address.address = "203.0.113.7"
http = check.attributes.request.http
http.method, http.path, http.host, http.scheme = "GET", "/", "127.0.0.1", "http"
http.headers["authorization"] = "Bearer " + sys.argv[1]
body = check.SerializeToString()
open(sys.argv[2], "wb").write(struct.pack(">BI", 0, len(body)) + body)
PY

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
taskset -c 0 "$NGINX" -p "$BENCH/" -c "$BENCH/conf/backend.nginx.conf" -e "$BENCH/run/logs/backend.err" -g 'daemon off;' </dev/null >/dev/null 2>&1 &
PIDS+=($!)
taskset -c 0 "$NGINX" -p "$OUT/front/" -c "$OUT/front/nginx.conf" -e "$OUT/front/error.log" -g 'daemon off;' </dev/null >/dev/null 2>&1 &
PIDS+=($!)
taskset -c 1 "$GATEWAY" serve --config "$OUT/gateway.json" >"$OUT/gateway.log" 2>&1 &
GATEWAY_PID=$!
PIDS+=($GATEWAY_PID)
for _ in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:18090/healthz" 2>/dev/null && break; sleep 0.2; done

# The Check's answer must be an allow (h2load sees only the HTTP status, not grpc-status).
CHECK_ANSWER=$(python3 - "$OUT/check.bin" <<'PY'
import sys
import grpc
from envoy.service.auth.v3 import external_auth_pb2
message = open(sys.argv[1], "rb").read()[5:]
with grpc.insecure_channel("127.0.0.1:18090") as channel:
    call = channel.unary_unary("/envoy.service.auth.v3.Authorization/Check",
                               request_serializer=lambda b: b,
                               response_deserializer=external_auth_pb2.CheckResponse.FromString)
    response = call(message, timeout=10)
print(response.WhichOneof("http_response"), response.status.code)
PY
)
[ "$CHECK_ANSWER" = "ok_response 0" ] || { echo "the Check is not allowed: $CHECK_ANSWER" >&2; exit 1; }

cpu() { awk '{print $14 + $15}' "/proc/$GATEWAY_PID/stat"; }
measure() { # NAME h2load-arguments...
  local name=$1
  shift
  timeout 30 taskset -c 0 h2load -D 1 "$@" >/dev/null 2>&1 || true
  local c0 c1 result rps
  c0=$(cpu)
  result=$(timeout $((DURATION + 30)) taskset -c 0 h2load -D "$DURATION" "$@" 2>&1 || true)
  c1=$(cpu)
  rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<<"$result")
  local status
  status=$(sed -n 's/^status codes: \(.*\)/\1/p' <<<"$result")
  awk -v n="$name" -v r="${rps:-0}" -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v d="$DURATION" -v s="$status" \
    'BEGIN{ printf "| %-6s | %9.0f | %7.1f | %s |\n", n, r, (r > 0 ? t / hz / (r * d) * 1e6 : 0), s }'
}
AUTH=(-H "authorization: Bearer $TOKEN")
{
  echo "# Authorizer cost ($(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$ROOT" rev-parse --short HEAD), ${DURATION} s, ${CONNECTIONS} connections)"
  echo
  echo "Check answer: $CHECK_ANSWER"
  echo
  echo "| case   |     req/s | gateway CPU µs/req | status codes |"
  echo "|---|---|---|---|"
  measure proxy --h1 -c "$CONNECTIONS" -t 1 "${AUTH[@]}" http://127.0.0.1:18090/
  measure authz --h1 -c "$CONNECTIONS" -t 1 "${AUTH[@]}" http://127.0.0.1:18081/
  measure check -c 16 -m 16 -t 1 -d "$OUT/check.bin" -H "content-type: application/grpc" -H "te: trailers" \
    http://127.0.0.1:18090/envoy.service.auth.v3.Authorization/Check
} | tee "$OUT/report.md"
