#!/usr/bin/env bash
# Refreshes per second through the shared store (sharedState.postgres) vs the process-local
# table, and the same non-refreshing load with and without sharedState — on loopback, bounded,
# self-stopping. On a Debian machine:
#
#   scripts/bench-refresh.sh                 # release build, 3000 refreshes per mode, ~2 minutes
#   REFRESHES=500 AUTH_GATEWAY_BIN=.build/debug/auth-gateway scripts/bench-refresh.sh   # quick
#
# What it does:
#   1. a throwaway PostgreSQL cluster (initdb + pg_ctl on a free loopback port, as the postgres
#      user when run as root), a `gateway` role and database;
#   2. `auth-gateway demo --services-only` (RainMaker-style auth service, echo backend) with
#      30-second access tokens; logs in 2 x REFRESHES times (one distinct refresh token each) and
#      waits for those access tokens to expire;
#   3. for each mode (local, shared): the gateway from config/gateway.json (ports replaced,
#      leeway 2 s, access log off, one event loop), then REFRESHES requests each carrying its own
#      expired pair, CONCURRENCY at a time: every one is a refresh (auth-service call, and in
#      shared mode a claim and a settle in PostgreSQL). Reports refreshes/s and latency;
#   4. for each mode: wrk (if installed) for DURATION seconds with one valid token: requests
#      that do not refresh never touch the database, so both numbers should agree within noise.
# Stops only the processes it started; leaves nothing but its temp dir's removal behind.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REFRESHES=${REFRESHES:-3000}
CONCURRENCY=${CONCURRENCY:-32}
DURATION=${DURATION:-5}
BIN=${AUTH_GATEWAY_BIN:-}
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [[ -z $BIN ]]; then
  log "building the release binary"
  (cd "$ROOT" && swift build -c release --product auth-gateway >/dev/null)
  BIN=$ROOT/.build/release/auth-gateway
fi
INITDB=$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 || true)
PGBIN=$(dirname "$(readlink -f "${INITDB:-/nonexistent}")")
for tool in initdb pg_ctl psql; do
  [[ -x $PGBIN/$tool ]] || { echo "needs PostgreSQL's server binaries (apt-get install postgresql)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/bench-refresh.XXXXXX)
chmod 0755 "$WORK"  # the postgres user walks into it
PIDS=()
as_pg() { if [[ $(id -u) -eq 0 ]]; then setpriv --reuid=postgres --regid=postgres --clear-groups "$@"; else "$@"; fi; }
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  [[ -d $WORK/pg/data ]] && as_pg "$PGBIN/pg_ctl" -D "$WORK/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_ports() { python3 -c 'import socket,sys
socks=[socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1",0))
print(*[s.getsockname()[1] for s in socks])' "$1"; }
read -r P_PG P_AUTH P_BACKEND P_MAIN P_ADMIN < <(free_ports 5)

# 1. PostgreSQL.
log "PostgreSQL on 127.0.0.1:$P_PG"
mkdir -p "$WORK/pg"
[[ $(id -u) -eq 0 ]] && chown postgres:postgres "$WORK/pg"
as_pg "$PGBIN/initdb" -D "$WORK/pg/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 --no-sync >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/server.log" -w \
  -o "-p $P_PG -k $WORK/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off" start >/dev/null
PGPASSWORD_BENCH=bench-$RANDOM$RANDOM
as_pg "$PGBIN/psql" -X -q -h "$WORK/pg" -p "$P_PG" -U postgres -d postgres \
  -c "CREATE ROLE gateway LOGIN PASSWORD '$PGPASSWORD_BENCH'" -c "CREATE DATABASE gateway OWNER gateway" >/dev/null

# 2. The demo services and the pairs.
log "demo services: auth $P_AUTH, backend $P_BACKEND"
"$BIN" demo --services-only --auth-port "$P_AUTH" --backend-port "$P_BACKEND" --token-lifetime 30 >"$WORK/demo.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$P_AUTH/.well-known/jwks.json" && break; sleep 0.1; done

cat >"$WORK/client.py" <<'PYEOF'
import http.client, json, sys, threading, time

def login(port, count, out):
    pairs, lock = [], threading.Lock()
    def worker(n):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for _ in range(n):
            connection.request("POST", "/v1/login", json.dumps({"user_name": "alice@example.com", "password": "alice-password"}),
                               {"Content-Type": "application/json"})
            body = json.loads(connection.getresponse().read())
            with lock:
                pairs.append((body["accesstoken"], body["refreshtoken"]))
    threads = [threading.Thread(target=worker, args=(count // 8 + (1 if i < count % 8 else 0),)) for i in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    json.dump(pairs, open(out, "w"))

def refresh(port, pairs_file, concurrency, label):
    pairs = json.load(open(pairs_file))
    latencies, statuses, lock, index = [], {}, threading.Lock(), [0]
    deadline = time.monotonic() + 120  # self-stopping whatever happens
    def worker():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while time.monotonic() < deadline:
            with lock:
                if index[0] >= len(pairs): return
                access, refresh_token = pairs[index[0]]; index[0] += 1
            started = time.monotonic()
            connection.request("GET", "/api/bench", headers={"Authorization": "Bearer " + access, "X-Refresh-Token": refresh_token})
            response = connection.getresponse(); body = response.read()
            elapsed = time.monotonic() - started
            outcome = str(response.status)
            if response.status != 200:
                try: outcome += " " + json.loads(body).get("type", "").rsplit(":", 1)[-1]
                except ValueError: pass
            with lock:
                latencies.append(elapsed)
                statuses[outcome] = statuses.get(outcome, 0) + 1
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.monotonic()
    for t in threads: t.start()
    for t in threads: t.join()
    took = time.monotonic() - started
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
    print(f"| {label} | {len(latencies)} | {len(latencies) / took:,.0f} | {p(0.5):.1f} ms | {p(0.99):.1f} ms | {statuses} |")

if sys.argv[1] == "login":
    login(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
else:
    refresh(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
PYEOF
log "logging in $((2 * REFRESHES)) times (one refresh token each)"
python3 "$WORK/client.py" login "$P_AUTH" "$REFRESHES" "$WORK/pairs-local.json"
python3 "$WORK/client.py" login "$P_AUTH" "$REFRESHES" "$WORK/pairs-shared.json"
LOGGED_IN=$SECONDS

# 3. and 4. One gateway per mode.
STATE_KEY=$(openssl rand -base64 32)
make_config() {  # MODE OUT
  python3 - "$ROOT/config/gateway.json" "$2" "$1" "$P_MAIN" "$P_ADMIN" "$P_AUTH" "$P_BACKEND" "$P_PG" <<'PYEOF'
import json, sys
source, target, mode, main, admin, auth, backend, pg = sys.argv[1:]
text = open(source).read().replace("http://127.0.0.1:9000", f"http://127.0.0.1:{auth}").replace("http://127.0.0.1:9100", f"http://127.0.0.1:{backend}")
config = json.loads(text)
config["listener"]["port"], config["admin"]["port"] = int(main), int(admin)
config["eventLoopThreads"] = 1
config["logging"] = {"level": "warning", "accessLog": False}
config["tokens"]["issuers"][0]["leewaySeconds"] = 2  # the demo's iat may lead the gateway's clock a little
if mode == "shared":
    config["sharedState"] = {"postgres": {"url": f"postgres://gateway:${{PGPASSWORD}}@127.0.0.1:{pg}/gateway", "tls": "disable"},
                             "encryptionKeyBase64": "${AUTH_GATEWAY_STATE_KEY}"}
json.dump(config, open(target, "w"), indent=1)
PYEOF
}
RESULTS=("| mode | refreshes | refreshes/s | p50 | p99 | statuses |" "|---|---:|---:|---:|---:|---|")
PLAIN=()
for mode in local shared; do
  make_config "$mode" "$WORK/gateway-$mode.json"
  PGPASSWORD=$PGPASSWORD_BENCH AUTH_GATEWAY_STATE_KEY=$STATE_KEY "$BIN" serve --config "$WORK/gateway-$mode.json" >"$WORK/gateway-$mode.log" 2>&1 &
  gateway=$!
  PIDS+=("$gateway")
  for _ in $(seq 200); do [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P_MAIN/readyz") == 200 ]] && break; sleep 0.1; done
  if [[ $mode == shared ]]; then
    for _ in $(seq 200); do curl -s "http://127.0.0.1:$P_ADMIN/healthz" | grep -q '"sharedState":{[^}]*"status":"ok"' && break; sleep 0.1; done
  fi
  while ((SECONDS < LOGGED_IN + 33)); do sleep 1; done  # the pairs' access tokens have expired (30 s + leeway)
  log "$mode: $REFRESHES refreshes, $CONCURRENCY at a time"
  RESULTS+=("$(python3 "$WORK/client.py" refresh "$P_MAIN" "$WORK/pairs-$mode.json" "$CONCURRENCY" "$mode")")
  if command -v wrk >/dev/null; then
    # A fresh token, valid for 30 s: every request verifies it (from the cache) and none refreshes.
    TOKEN=$(curl -s "http://127.0.0.1:$P_AUTH/v1/login" -H 'Content-Type: application/json' \
      -d '{"user_name":"alice@example.com","password":"alice-password"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["accesstoken"])')
    log "$mode: wrk, ${DURATION}s, 64 connections, one token (no refresh)"
    PLAIN+=("| $mode | $(wrk -t1 -c64 -d"${DURATION}s" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$P_MAIN/api/plain" | awk '/Requests\/sec/ {print $2}') |")
  fi
  if [[ $mode == shared ]]; then
    rows=$(as_pg "$PGBIN/psql" -X -A -t -h "$WORK/pg" -p "$P_PG" -U postgres -d gateway -c "SELECT count(*) FROM auth_gateway_refresh_outcomes")
    log "shared: $rows rows in auth_gateway_refresh_outcomes (one per refreshed token)"
  fi
  kill "$gateway"; wait "$gateway" 2>/dev/null || true
done

echo
echo "Refreshes, each with its own refresh token ($(basename "$BIN") at $BIN):"
printf '%s\n' "${RESULTS[@]}"
if ((${#PLAIN[@]})); then
  echo
  echo "Requests that do not refresh (wrk, one valid token, ${DURATION}s, 64 connections):"
  echo "| mode | req/s |"
  echo "|---|---:|"
  printf '%s\n' "${PLAIN[@]}"
else
  echo "(wrk not installed: the non-refreshing comparison was skipped; apt-get install wrk)"
fi
