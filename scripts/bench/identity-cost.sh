#!/usr/bin/env bash
# What identity for backends costs per request (docs/benchmarks.md, "What features cost"; issue
# 41: each at most 3 %): the same route plain, with `assertion` (served from the assertion cache:
# the bench's one token, so every request after the first reuses its assertion), and with
# `exchange` (the exchanged token cached: one call to the token endpoint, then none), gateway CPU
# per request alternated by scripts/bench/cpu-by-config.sh (REPS, DURATION as there; -2: h2c).
# The token endpoint is a few lines of Python answering every RFC 8693 request with one token and
# counting its calls; the script prints the count, which must be 1 (the cache held).
#   scripts/bench/identity-cost.sh [-r REPS] [-d DURATION] [-2]
# Needs the bench copy (scripts/bench/features.sh makes it) and the release binary (GATEWAY).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=$ROOT/.bench-work/bench
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
export GATEWAY
[ -d "$BENCH/keys" ] || { echo "no bench copy at $BENCH: run scripts/bench/features.sh once" >&2; exit 1; }
[ -x "$GATEWAY" ] || { echo "no release gateway at $GATEWAY" >&2; exit 1; }
WORK=$(mktemp -d)
endpoint=""
cleanup() { [ -z "$endpoint" ] || { kill "$endpoint" 2>/dev/null || true; wait "$endpoint" 2>/dev/null || true; }; rm -rf "$WORK"; }
trap cleanup EXIT

# The token endpoint on 127.0.0.1:18170, on CPU 0 with the load generator.
cat >"$WORK/token_endpoint.py" <<'PY'
import http.server, json, sys
calls = 0
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global calls
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/token":
            calls += 1
            body = json.dumps({"access_token": "exchanged-bench-token", "token_type": "Bearer", "expires_in": 3600,
                               "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}).encode()
        else:
            body = json.dumps({"calls": calls}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 18170), Handler).serve_forever()
PY
taskset -c 0 python3 "$WORK/token_endpoint.py" &
endpoint=$!

"$GATEWAY" assertion-key new --kid bench | grep "^{" >"$WORK/entry.json"
python3 - "$WORK" "$BENCH" <<'PY'
import json, sys
work, bench = sys.argv[1], sys.argv[2]
entry = json.load(open(f"{work}/entry.json"))
entry["status"] = "current"
json.dump([entry], open(f"{work}/assertion-keys.json", "w"))
def config(route_extra, top_extra):
    config = {"listener": {"host": "127.0.0.1", "port": 18090}, "eventLoopThreads": 1,
              "limits": {"maxConnections": 20000},
              "tokens": {"sources": [{"header": "Authorization", "schemes": ["Bearer"]}],
                         "issuers": [{"issuer": "https://auth.bench.local", "audiences": ["bench-gateway"],
                                      "leewaySeconds": 0,
                                      "keys": [{"kid": "bench-rs256", "algorithm": "RS256",
                                                "publicKeyPEMFile": f"{bench}/keys/rs256-public.pem"}]}]},
              "backends": {"bench": {"urls": ["http://127.0.0.1:18080"], "maxConnectionsPerThread": 512}},
              "routes": [dict({"name": "all", "pathPrefix": "/", "backend": "bench"}, **route_extra)],
              "logging": {"level": "warning", "accessLog": False}}
    config.update(top_extra)
    return config
json.dump(config({}, {}), open(f"{work}/plain.json", "w"))
json.dump(config({"assertion": {"audience": "bench"}},
                 {"identityAssertion": {"issuer": "https://gateway.bench.local", "keysFile": "assertion-keys.json"}}),
          open(f"{work}/assertion.json", "w"))
json.dump(config({"exchange": {"tokenEndpoint": "http://127.0.0.1:18170/token", "clientId": "gateway",
                               "clientSecret": "bench-secret", "audience": ["bench"]}}, {}),
          open(f"{work}/exchange.json", "w"))
PY
for name in plain assertion exchange; do "$GATEWAY" check --config "$WORK/$name.json" >/dev/null; done
"$ROOT/scripts/bench/cpu-by-config.sh" "$@" plain="$WORK/plain.json" assertion="$WORK/assertion.json" \
    exchange="$WORK/exchange.json"
echo "token endpoint calls over every exchange run (one per gateway start): $(curl -s -X POST http://127.0.0.1:18170/calls)"
