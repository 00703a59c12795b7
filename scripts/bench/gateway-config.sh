# Sourced by the bench scripts that load the gateway exactly as compare.sh does (profile-h2.sh,
# floor-vs-gateway.sh): one worker thread on 127.0.0.1:18090, the bench's RS256 key, the bench's
# nginx backend on 127.0.0.1:18080, no access log.
#   write_bench_gateway_config BENCH_COPY OUTPUT_FILE
write_bench_gateway_config() {
    cat >"$2" <<JSON
{ "listener": { "host": "127.0.0.1", "port": 18090 }, "eventLoopThreads": 1, "limits": { "maxConnections": 20000 },
  "tokens": { "sources": [ { "header": "Authorization", "schemes": ["Bearer"] } ],
    "issuers": [ { "issuer": "https://auth.bench.local", "audiences": ["bench-gateway"], "leewaySeconds": 0,
      "keys": [ { "kid": "bench-rs256", "algorithm": "RS256", "publicKeyPEMFile": "$1/keys/rs256-public.pem" } ] } ] },
  "backends": { "bench": { "urls": ["http://127.0.0.1:18080"], "maxConnectionsPerThread": 512 } },
  "routes": [ { "name": "all", "pathPrefix": "/", "backend": "bench" } ],
  "logging": { "level": "warning", "accessLog": false } }
JSON
}
