#!/usr/bin/env bash
# What a browser session costs a request (docs/benchmarks.md; target: at most 5 % more than the
# same request with a bearer token). One release gateway process, pinned to CPU 0, with
# browserSignIn in front of the demo's provider and echo backend (`auth-gateway demo
# --services-only`, pinned to CPU 1 with wrk). alice signs in once through the echo route
# (scripts/bench/demo_sign_in.py, which reads the bearer token the backend received); then wrk
# loads a second route, `/load/` on an nginx that answers "ok" at once (CPU 1, as compare.sh
# places its backend), alternately with her session cookie and with that bearer token — ROUNDS
# rounds of DURATION each, so that drift on a busy machine falls on both alike. With the fast
# backend the gateway's core is saturated, as in compare.sh. PERF_DIR=<folder> also records a
# `perf` profile of each load there (bearer.data, session.data; the last round's). Prints each round (requests per
# second, and the gateway process's CPU time per request from /proc) and the ratios of the
# medians. BACKEND=echo loads the echo route instead (the gateway then waits on the echo
# backend, and only the CPU figure means something).
# Needs: swift build -c release --scratch-path .build-release --product auth-gateway; wrk; nginx; taskset.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GATEWAY=${GATEWAY:-$ROOT/.build-release/release/auth-gateway}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
PORT=18090
BACKEND=${BACKEND:-nginx}
for tool in wrk taskset python3 nginx; do command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }; done
[ -x "$GATEWAY" ] || { echo "no release binary at $GATEWAY" >&2; exit 1; }
WORK=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

taskset -c 1 "$GATEWAY" demo --services-only --port "$PORT" --auth-port 19000 --backend-port 19100 \
    --token-lifetime 3600 >"$WORK/services.log" 2>&1 &
pids+=($!)
cat >"$WORK/gateway.json" <<JSON
{
  "listener": { "host": "127.0.0.1", "port": $PORT },
  "eventLoopThreads": 1,
  "limits": { "maxConnections": 20000 },
  "tokens": { "issuers": [ { "issuer": "http://127.0.0.1:19000", "discovery": true, "audiences": ["demo-api"] } ] },
  "browserSignIn": {
    "issuer": "http://127.0.0.1:19000", "clientId": "gateway", "clientSecret": "gateway-secret",
    "publicBaseURL": "http://localhost:$PORT", "scopes": ["openid", "profile", "email"]
  },
  "backends": {
    "echo": { "urls": ["http://127.0.0.1:19100"], "maxConnectionsPerThread": 512 },
    "fast": { "urls": ["http://127.0.0.1:19200"], "maxConnectionsPerThread": 512 }
  },
  "routes": [
    { "name": "load", "pathPrefix": "/load/", "backend": "fast", "signIn": true },
    { "name": "app", "pathPrefix": "/", "backend": "echo", "signIn": true }
  ],
  "logging": { "level": "warning", "accessLog": false }
}
JSON
cat >"$WORK/nginx.conf" <<NGINX
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/nginx.error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $WORK; proxy_temp_path $WORK; fastcgi_temp_path $WORK; uwsgi_temp_path $WORK; scgi_temp_path $WORK;
    keepalive_requests 1000000;
    server { listen 127.0.0.1:19200 backlog=4096; location / { return 200 "ok\n"; } }
}
NGINX
taskset -c 1 nginx -p "$WORK/" -c "$WORK/nginx.conf" -g 'daemon off;' &
pids+=($!)
for _ in $(seq 100); do grep -q "echo backend" "$WORK/services.log" && break; sleep 0.1; done
taskset -c 0 "$GATEWAY" serve --config "$WORK/gateway.json" >"$WORK/gateway.log" 2>&1 &
pids+=($!)
gateway_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/readyz" && break; sleep 0.1; done
signed=$(python3 "$ROOT/scripts/bench/demo_sign_in.py" "http://127.0.0.1:$PORT/app/")
cookie=$(sed -n 1p <<<"$signed")
bearer=$(sed -n 2p <<<"$signed")

cpu_ticks() { awk '{print $14 + $15}' "/proc/$gateway_pid/stat"; }
run() { # NAME HEADER -> "<requests/s> <gateway CPU microseconds per request>"
    local output before after
    before=$(cpu_ticks)
    if [ -n "${PERF_DIR:-}" ]; then # a profile of each load, for scripts/bench/stage-budget.py
        perf record -F 999 -g -p "$gateway_pid" -o "$PERF_DIR/$1.data" -- sleep "${DURATION%s}" >/dev/null 2>&1 &
    fi
    output=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" -H "Accept: application/json" -H "$2" \
        "http://127.0.0.1:$PORT/$path/items")
    after=$(cpu_ticks)
    # Every answer must be 200: a refused session or token would make the run look cheap.
    if grep -q "Non-2xx" <<<"$output"; then echo "$1: $(grep Non-2xx <<<"$output")" >&2; exit 1; fi
    awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
        /^ *[0-9]+ requests in/ {requests = $1}
        /Requests\/sec/ {rate = $2}
        END {printf "%s %.1f\n", rate, ticks / hz * 1e6 / requests}' <<<"$output"
}
if [ "$BACKEND" = echo ]; then path=app; else path=load; fi
taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d2s -H "Cookie: $cookie" "http://127.0.0.1:$PORT/$path/items" >/dev/null # warm-up
bearer_rates=()
session_rates=()
for round in $(seq "$ROUNDS"); do
    b=$(run bearer "Authorization: Bearer $bearer")
    s=$(run session "Cookie: $cookie")
    bearer_rates+=("$b")
    session_rates+=("$s")
    printf 'round %d: bearer %s req/s %s µs CPU/request; session %s req/s %s µs CPU/request\n' \
        "$round" ${b} ${s}
done
# Both still work after the load.
for header in "Authorization: Bearer $bearer" "Cookie: $cookie"; do
    status=$(curl -s -o /dev/null -w '%{http_code}' -H "Accept: application/json" -H "$header" "http://127.0.0.1:$PORT/$path/items")
    [ "$status" = 200 ] || { echo "a request after the load got $status" >&2; exit 1; }
done
python3 - "${bearer_rates[*]}" "${session_rates[*]}" <<'PY'
import statistics, sys
def median(runs, field):
    values = runs.split()
    return statistics.median(float(values[i + field]) for i in range(0, len(values), 2))
bearer, session = median(sys.argv[1], 1), median(sys.argv[2], 1)
bearer_rate, session_rate = median(sys.argv[1], 0), median(sys.argv[2], 0)
print(f"median requests per second: bearer {bearer_rate:.0f}, session {session_rate:.0f} "
      f"(session ÷ bearer {session_rate / bearer_rate:.3f})")
print(f"median gateway CPU per request: bearer {bearer:.1f} µs, session {session:.1f} µs; "
      f"a session request costs {100 * (session / bearer - 1):+.1f} % (target: at most +5 %)")
PY
