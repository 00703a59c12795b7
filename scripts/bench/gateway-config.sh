# Sourced by the bench scripts that load the gateway exactly as compare.sh does (profile-h2.sh,
# floor-vs-gateway.sh, proxy-floor.sh): one worker thread on 127.0.0.1:18090, the bench's RS256
# key, the bench's nginx backend on 127.0.0.1:18080, no access log. Also starts that backend
# and waits for servers to answer.
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

# The bench's nginx backend on 127.0.0.1:18080, pinned to CPU 0 as compare.sh pins it; its pid
# is added to the caller's `pids` array (which the caller's cleanup stops).
#   start_bench_backend BENCH_COPY ERROR_LOG
start_bench_backend() {
    mkdir -p "$1/run/logs" "$1/run/tmp/backend"
    taskset -c 0 nginx -p "$1/" -c "$1/conf/backend.nginx.conf" -e "$2" -g 'daemon off;' &
    pids+=($!)
}

# Waits (at most 10 s per port) until each 127.0.0.1:PORT answers `GET /` with the bearer token
# with a 200; exits the script if one does not.
#   wait_for_200 TOKEN PORT...
wait_for_200() {
    local token=$1 port code
    shift
    for port in "$@"; do
        for _ in $(seq 100); do
            code=$(curl -s -o /dev/null -w "%{http_code}" -H "authorization: Bearer $token" "http://127.0.0.1:$port/" || true)
            [ "$code" = 200 ] && break
            sleep 0.1
        done
        [ "$code" = 200 ] || { echo "127.0.0.1:$port does not answer 200" >&2; exit 1; }
    done
}

# Exits unless the bench copy, the release gateway ($GATEWAY) and each named tool are present.
#   require_bench BENCH_COPY TOOL...
require_bench() {
    local bench=$1 tool
    shift
    [ -d "$bench/keys" ] || { echo "no bench copy at $bench: run scripts/bench/features.sh once" >&2; exit 1; }
    [ -x "$GATEWAY" ] || { echo "no release gateway at $GATEWAY" >&2; exit 1; }
    for tool in "$@"; do command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }; done
}
