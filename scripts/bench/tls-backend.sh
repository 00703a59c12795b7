#!/usr/bin/env bash
# The gateway against HAProxy + jwt_verify over a TLS backend, in one run (docs/forwarding.md; issue
# 18's anchor): HAProxy with `ssl verify required` (and, for mutual TLS, a client certificate), the
# gateway with `backends.*.tls`, both in front of the same nginx, which serves the same answers
# over plain HTTP, TLS and mutual TLS. A throwaway CA signs the server and client certificates.
# Pinned as compare.sh pins: wrk and nginx on CPU 0, HAProxy (1 thread) and the gateway (1 event
# loop) on CPU 1, each idle while the other is loaded. wrk -c 64, GET with the bench RS256 token;
# targets interleaved, REPS rounds of SECS seconds, medians; ratios gateway ÷ HAProxy per backend
# kind. About 2 minutes. Needs nginx, haproxy, wrk, openssl, the release binary and a bench copy
# (scripts/bench/features.sh makes one in .bench-work/bench).
#   scripts/bench/tls-backend.sh [SECS] [REPS]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
SECS=${1:-5}
REPS=${2:-3}
OUT=$ROOT/.bench-work/tls-backend-$(date +%Y%m%d-%H%M%S)
for tool in nginx haproxy wrk openssl taskset curl; do command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }; done
[ -d "$BENCH/keys" ] || { echo "no bench copy at $BENCH: run scripts/bench/features.sh once" >&2; exit 1; }
[ -x "$GATEWAY" ] || { echo "no release binary at $GATEWAY" >&2; exit 1; }
mkdir -p "$OUT/pki" "$OUT/tmp" "$OUT/logs"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# A throwaway CA; the backend's certificate names backend.bench.local and 127.0.0.1.
PKI=$OUT/pki
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$PKI/ca.key" -out "$PKI/ca.pem" 2>/dev/null
issue() { # NAME SUBJECT EXTENSIONS
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" -keyout "$PKI/$1.key" -out "$PKI/$1.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" -CAcreateserial -days 1 \
    -extfile <(printf '%s\n' "$3") -out "$PKI/$1.pem" 2>/dev/null
  cat "$PKI/$1.pem" "$PKI/$1.key" >"$PKI/$1.combined.pem"
}
issue server backend.bench.local "subjectAltName=DNS:backend.bench.local,IP:127.0.0.1
extendedKeyUsage=serverAuth"
issue client bench-gateway "extendedKeyUsage=clientAuth"

cat >"$OUT/backend.nginx.conf" <<NGINX
worker_processes 1;
worker_rlimit_nofile 16384;
pid $OUT/backend.pid;
error_log $OUT/logs/backend.error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_timeout 65s;
    keepalive_requests 10000000;
    client_body_temp_path $OUT/tmp;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate $PKI/server.pem;
    ssl_certificate_key $PKI/server.key;
    server { listen 127.0.0.1:18180 backlog=4096; location / { return 200 "ok\n"; } }
    server { listen 127.0.0.1:18443 ssl backlog=4096; location / { return 200 "ok\n"; } }
    server {
        listen 127.0.0.1:18444 ssl backlog=4096;
        ssl_client_certificate $PKI/ca.pem;
        ssl_verify_client on;
        location / { return 200 "ok\n"; }
    }
}
NGINX

jwt_rules() {
  cat <<'RULES'
    http-request set-var(txn.bearer) http_auth_bearer
    http-request set-var(txn.jwt_alg) var(txn.bearer),jwt_header_query('$.alg')
    http-request deny deny_status 401 unless { var(txn.jwt_alg) -m str RS256 }
    http-request deny deny_status 401 unless { var(txn.bearer),jwt_verify(txn.jwt_alg,"${BENCH_DIR}/keys/rs256-public.pem") -m int 1 }
    http-request set-var(txn.exp) var(txn.bearer),jwt_payload_query('$.exp','int')
    http-request set-var(txn.now) date()
    http-request deny deny_status 401 unless { var(txn.exp),sub(txn.now) -m int gt 0 }
    http-request deny deny_status 401 unless { var(txn.bearer),jwt_payload_query('$.iss') -m str "https://auth.bench.local" }
    http-request deny deny_status 401 unless { var(txn.bearer),jwt_payload_query('$.aud') -m str "bench-gateway" }
RULES
}
cat >"$OUT/haproxy.cfg" <<HAPROXY
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 30s
    option http-keep-alive
    http-reuse always
backend be_plain
    server backend 127.0.0.1:18180
backend be_tls
    server backend 127.0.0.1:18443 ssl verify required ca-file $PKI/ca.pem sni str(backend.bench.local) verifyhost backend.bench.local
backend be_mtls
    server backend 127.0.0.1:18444 ssl verify required ca-file $PKI/ca.pem sni str(backend.bench.local) verifyhost backend.bench.local crt $PKI/client.combined.pem
frontend fe_jwt
    bind 127.0.0.1:18183
$(jwt_rules)
    use_backend be_tls if { path_beg /tls/ }
    use_backend be_mtls if { path_beg /mtls/ }
    default_backend be_plain
HAPROXY

cat >"$OUT/gateway.json" <<JSON
{ "listener": { "host": "127.0.0.1", "port": 18190 }, "eventLoopThreads": 1, "limits": { "maxConnections": 20000 },
  "tokens": { "sources": [ { "header": "Authorization", "schemes": ["Bearer"] } ],
    "issuers": [ { "issuer": "https://auth.bench.local", "audiences": ["bench-gateway"], "leewaySeconds": 0,
      "keys": [ { "kid": "bench-rs256", "algorithm": "RS256", "publicKeyPEMFile": "$BENCH/keys/rs256-public.pem" } ] } ] },
  "backends": {
    "plain": { "urls": ["http://127.0.0.1:18180"], "maxConnectionsPerThread": 512 },
    "tls": { "urls": ["https://127.0.0.1:18443"], "maxConnectionsPerThread": 512,
      "tls": { "caCertificatePEMFile": "$PKI/ca.pem", "serverName": "backend.bench.local" } },
    "mtls": { "urls": ["https://127.0.0.1:18444"], "maxConnectionsPerThread": 512,
      "tls": { "caCertificatePEMFile": "$PKI/ca.pem", "serverName": "backend.bench.local",
        "certificatePEMFile": "$PKI/client.pem", "privateKeyPEMFile": "$PKI/client.key" } } },
  "routes": [ { "name": "tls", "pathPrefix": "/tls/", "backend": "tls" }, { "name": "mtls", "pathPrefix": "/mtls/", "backend": "mtls" },
    { "name": "plain", "pathPrefix": "/", "backend": "plain" } ],
  "logging": { "level": "warning", "accessLog": false } }
JSON

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
taskset -c 0 nginx -p "$OUT/" -c "$OUT/backend.nginx.conf" -e "$OUT/logs/backend.error.log" -g 'daemon off;' &
pids+=($!)
BENCH_DIR=$BENCH taskset -c 1 haproxy -f "$OUT/haproxy.cfg" -db >"$OUT/logs/haproxy.log" 2>&1 &
pids+=($!)
taskset -c 1 "$GATEWAY" serve --config "$OUT/gateway.json" >"$OUT/logs/gateway.log" 2>&1 &
pids+=($!)

TOKEN=$(cat "$BENCH/keys/tokens/valid-rs256.jwt")
declare -A URL=(
  [haproxy-plain]=http://127.0.0.1:18183/p [gateway-plain]=http://127.0.0.1:18190/p
  [haproxy-tls]=http://127.0.0.1:18183/tls/ [gateway-tls]=http://127.0.0.1:18190/tls/
  [haproxy-mtls]=http://127.0.0.1:18183/mtls/ [gateway-mtls]=http://127.0.0.1:18190/mtls/
)
ORDER=(haproxy-plain gateway-plain haproxy-tls gateway-tls haproxy-mtls gateway-mtls)
# Every target answers 200 with the token and 401 without, before any load.
for name in "${ORDER[@]}"; do
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "${URL[$name]}")" = 200 ] && break
    sleep 0.1
  done
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "${URL[$name]}")" = 200 ] || { echo "$name does not answer 200" >&2; exit 1; }
  [ "$(curl -s -o /dev/null -w '%{http_code}' "${URL[$name]}")" = 401 ] || { echo "$name does not answer 401 without a token" >&2; exit 1; }
done

: >"$OUT/runs.tsv"
run() { # NAME SECONDS -> req/s and non-2xx
  BENCH_TOKEN_FILE=$BENCH/keys/tokens/valid-rs256.jwt timeout -k 2 $(($2 + 15)) taskset -c 0 \
    wrk -t1 -c64 -d"$2s" --timeout 5s -s "$BENCH/wrk/auth.lua" "${URL[$1]}" 2>&1 | sed -n 's/^BENCHJSON //p' \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["rps"], j["err_status"] + j["err_connect"] + j["err_read"] + j["err_write"] + j["err_timeout"])'
}
for name in "${ORDER[@]}"; do run "$name" 1 >/dev/null; done   # warm-up: pools and TLS sessions
for rep in $(seq "$REPS"); do
  for name in "${ORDER[@]}"; do
    read -r rps errors < <(run "$name" "$SECS")
    printf '%s\t%s\t%s\t%s\n' "$name" "$rep" "$rps" "$errors" >>"$OUT/runs.tsv"
    log "rep $rep $name: $rps req/s ($errors errors)"
  done
done
python3 - "$OUT/runs.tsv" <<'PY' | tee "$OUT/report.md"
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
med = lambda n: st.median(float(r[2]) for r in rows if r[0] == n)
err = lambda n: sum(int(r[3]) for r in rows if r[0] == n)
print("| backend | HAProxy + jwt_verify req/s | gateway req/s | gateway ÷ HAProxy | errors (HAProxy / gateway) |")
print("|---|---:|---:|---:|---:|")
for kind, label in (("plain", "plain HTTP"), ("tls", "TLS, server verified"), ("mtls", "mutual TLS")):
    h, g = med("haproxy-" + kind), med("gateway-" + kind)
    print(f"| {label} | {h:,.0f} | {g:,.0f} | {g / h:.2f}× | {err('haproxy-' + kind)} / {err('gateway-' + kind)} |")
PY
echo "results: $OUT" >&2
