#!/usr/bin/env bash
# Route matching at scale (docs/benchmarks.md, "Route table at scale"; issue 43: 10 000 prefix
# routes and 10 000 host routes each within 5 % of a 1-route table). For N = 1, 100, 1000, 10000
# it writes two configurations of N `auth: none` routes — N prefix routes `/service-<i>/`, and N
# host routes `host-<i>.example.com` with `pathPrefix: /` — and loads each with the request
# matching the LAST route (`GET /service-<N-1>/items/42`; `Host: host-<N-1>.example.com`).
# One worker thread (eventLoopThreads 1) on CPU 1, wrk (-t1 -c32) and a tiny nginx backend
# (`return 200`) on CPU 0, loopback only, ports 18180 (backend) and 18190 (gateway). Each round
# runs, for both kinds and every N > 1, N against N = 1 back to back (N first every other round,
# so drift falls on both sides); a run is a fresh gateway, 1 s of warm-up and DURATION s
# counted. Prints req/s and the gateway's user + system CPU per request, and each N's median
# ratio to its N = 1 partner. Every answer must be a 200.
# Then, for the 10 000-route files: `check`; start-up (launch to the last route's first 200);
# SIGHUP reload from a 1-route file to the 10 000-route file (signal to the last route's first
# 200).
#   scripts/bench/routes-scale.sh            (ROUNDS=5 DURATION=5 SIZES="1 100 1000 10000": ~9 min)
# Needs wrk (apt-get install -y wrk), nginx, curl, taskset, python3 and the release binary:
# swift build -c release --product auth-gateway (GATEWAY=path overrides). Stops by itself
# (every wrk and wait is bounded) and stops only what it started.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GATEWAY=${GATEWAY:-$ROOT/.build/release/auth-gateway}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
SIZES=${SIZES:-1 100 1000 10000}
BACKEND_PORT=18180
PORT=18190
for tool in wrk nginx curl taskset python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y wrk nginx curl)" >&2; exit 1; }
done
[ -x "$GATEWAY" ] || { echo "no release gateway at $GATEWAY: swift build -c release --product auth-gateway" >&2; exit 1; }
WORK=$(mktemp -d)
backend=""
gateway=""
cleanup() {
    for pid in $gateway $backend; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# The backend: nginx answering 200 "ok" to everything, never as a daemon.
mkdir -p "$WORK/nginx/logs" "$WORK/nginx/tmp"
cat >"$WORK/nginx/nginx.conf" <<NGINX
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 10000000;
    client_body_temp_path $WORK/nginx/tmp/body;
    proxy_temp_path $WORK/nginx/tmp/proxy;
    fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
    uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
    scgi_temp_path $WORK/nginx/tmp/scgi;
    server { listen 127.0.0.1:$BACKEND_PORT; location / { return 200 "ok\n"; } }
}
NGINX
taskset -c 0 nginx -p "$WORK/nginx/" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' </dev/null >/dev/null 2>&1 &
backend=$!

# write_config KIND N FILE: N routes of KIND (prefix | host).
write_config() {
    python3 - "$1" "$2" "$3" "$PORT" "$BACKEND_PORT" <<'PY'
import json, sys
kind, count, path, port, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
if kind == "prefix":
    routes = [{"name": f"r{i}", "pathPrefix": f"/service-{i}/", "backend": "b", "auth": "none"} for i in range(count)]
else:
    routes = [{"name": f"r{i}", "host": f"host-{i}.example.com", "pathPrefix": "/", "backend": "b", "auth": "none"}
              for i in range(count)]
config = {"listener": {"host": "127.0.0.1", "port": port}, "eventLoopThreads": 1,
          "backends": {"b": {"urls": [f"http://127.0.0.1:{backend}"], "maxConnectionsPerThread": 256}},
          "routes": routes, "logging": {"level": "warning", "accessLog": False}}
with open(path, "w") as file:
    json.dump(config, file)
PY
}
# The request that matches the last of N routes of KIND: "PATH HOST".
request_of() {
    if [ "$1" = prefix ]; then echo "/service-$(($2 - 1))/items/42 bench.example.com"; else echo "/items/42 host-$(($2 - 1)).example.com"; fi
}
# wait_for_200 PATH HOST [TRIES]: polls every 10 ms (at most TRIES times, default 1000).
wait_for_200() {
    local code=""
    for _ in $(seq "${3:-1000}"); do
        code=$(curl -s -o /dev/null -w "%{http_code}" -H "Host: $2" "http://127.0.0.1:$PORT$1" || true)
        [ "$code" = 200 ] && return 0
        sleep 0.01
    done
    echo "127.0.0.1:$PORT$1 (Host $2) answers ${code:-nothing}, not 200" >&2
    return 1
}
now_ms() { date +%s%3N; }

for kind in prefix host; do for size in 1 $SIZES; do write_config "$kind" "$size" "$WORK/$kind-$size.json"; done; done
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$BACKEND_PORT/" && break; sleep 0.1; done

HZ=$(getconf CLK_TCK)
# start_gateway CONFIG: the gateway on CPU 1 ($gateway is its pid until stop_gateway).
start_gateway() {
    taskset -c 1 "$GATEWAY" serve --config "$1" >"$WORK/gateway.log" 2>&1 &
    gateway=$!
}
stop_gateway() {
    kill "$gateway"
    wait "$gateway" 2>/dev/null || true
    gateway=""
}
# measure KIND N: sets MEASURED to "req/s cpu-µs-per-request" (not a subshell: the cleanup
# must know the gateway it started). A run with socket errors (wrk timeouts on a machine busy
# with other work) is run again, twice at most; a non-2xx answer ends the script.
measure() {
    local attempt
    for attempt in 1 2 3; do
        measure_once "$@" && return 0
        log "$1 $2: socket errors, run again ($attempt)"
    done
    exit 1
}
measure_once() {
    local path host out u0 s0 u1 s1 rps
    read -r path host <<<"$(request_of "$1" "$2")"
    start_gateway "$WORK/$1-$2.json"
    wait_for_200 "$path" "$host" || { cat "$WORK/gateway.log" >&2; exit 1; }
    timeout 20 taskset -c 0 wrk -t1 -c32 -d1s -H "Host: $host" "http://127.0.0.1:$PORT$path" >/dev/null
    read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$gateway/stat")
    out=$(timeout $((DURATION + 20)) taskset -c 0 wrk -t1 -c32 -d"${DURATION}s" -H "Host: $host" "http://127.0.0.1:$PORT$path")
    read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$gateway/stat")
    stop_gateway
    if grep -q "Non-2xx" <<<"$out"; then
        echo "$1 $2: $(grep 'Non-2xx' <<<"$out")" >&2
        exit 1
    fi
    if grep -q "Socket errors" <<<"$out"; then
        echo "$1 $2: $(grep 'Socket errors' <<<"$out")" >&2
        return 1
    fi
    rps=$(sed -n 's/^Requests\/sec: *//p' <<<"$out")
    MEASURED=$(awk -v r="$rps" -v cpu=$((u1 - u0 + s1 - s0)) -v hz="$HZ" -v d="$DURATION" \
        'BEGIN{printf "%.0f %.2f", r, cpu / hz / (r * d) * 1e6}')
}

# Each round, for each kind and each N > 1: N = 1 and N back to back (N first every other
# round), so that both runs of a pair meet the same machine.
results=()
for round in $(seq "$ROUNDS"); do
    for kind in prefix host; do
        line=""
        for size in $SIZES; do
            [ "$size" = 1 ] && continue
            if [ $((round % 2)) = 1 ]; then pair=(1 "$size"); else pair=("$size" 1); fi
            for run in "${pair[@]}"; do
                measure "$kind" "$run"
                [ "$run" = 1 ] && base=$MEASURED || other=$MEASURED
            done
            results+=("$kind $size $other $base")
            line+="N=$size $other vs N=1 $base  "
        done
        log "round $round $kind (req/s, CPU µs per request): $line"
    done
done

python3 - "${results[@]}" <<'PY'
import statistics, sys
pairs = {}
for item in sys.argv[1:]:
    kind, size, rate, cpu, base_rate, base_cpu = item.split()
    pairs.setdefault((kind, int(size)), []).append((float(rate), float(cpu), float(base_rate), float(base_cpu)))
print("| routes | N | req/s, N routes | req/s, 1 route | req/s ratio | CPU µs/request, N | CPU µs/request, 1 | CPU ratio | pairs (req/s ratio) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
for (kind, size), runs in sorted(pairs.items(), key=lambda item: (item[0][0] != "prefix", item[0][1])):
    median = lambda values: statistics.median(values)
    rate_ratios = [r / b for r, _, b, _ in runs]
    cpu_ratios = [c / bc for _, c, _, bc in runs]
    print(f"| {kind} | {size} | {median(r for r, _, _, _ in runs):.0f} | {median(b for _, _, b, _ in runs):.0f} | "
          f"{median(rate_ratios):.3f} | {median(c for _, c, _, _ in runs):.2f} | {median(bc for _, _, _, bc in runs):.2f} | "
          f"{median(cpu_ratios):.3f} | {', '.join(f'{x:.2f}' for x in rate_ratios)} |")
print("(ratios: the median of each pair's N ÷ its N = 1 run)")
PY

# check, start-up and reload of the largest files, 3 times each (wall-clock ms; the gateway's
# CPU for start-up and reload in parentheses, from /proc).
largest=$(printf '%s\n' $SIZES | sort -n | tail -1)
cpu_ms() { awk -v hz="$HZ" '{printf "%d", ($14 + $15) * 1000 / hz}' "/proc/$1/stat"; }
for kind in prefix host; do
    file=$WORK/$kind-$largest.json
    read -r path host <<<"$(request_of "$kind" "$largest")"
    read -r first_path first_host <<<"$(request_of "$kind" 1)"
    checks="" startups="" reloads=""
    for _ in 1 2 3; do
        start=$(now_ms)
        "$GATEWAY" check --config "$file" >/dev/null
        checks+=" $(($(now_ms) - start))"
        start=$(now_ms)
        start_gateway "$file"
        wait_for_200 "$path" "$host" || { cat "$WORK/gateway.log" >&2; exit 1; }
        startups+=" $(($(now_ms) - start)) ($(cpu_ms "$gateway"))"
        stop_gateway
        # Reload: serve a 1-route file, put the large one in its place, SIGHUP, wait for the
        # last route.
        write_config "$kind" 1 "$WORK/reload.json"
        start_gateway "$WORK/reload.json"
        wait_for_200 "$first_path" "$first_host" || { cat "$WORK/gateway.log" >&2; exit 1; }
        cp "$file" "$WORK/reload.json"
        before=$(cpu_ms "$gateway")
        start=$(now_ms)
        kill -HUP "$gateway"
        wait_for_200 "$path" "$host" || { cat "$WORK/gateway.log" >&2; exit 1; }
        reloads+=" $(($(now_ms) - start)) ($(($(cpu_ms "$gateway") - before)))"
        stop_gateway
    done
    echo "$largest $kind routes, ms: check$checks; start-up to the last route's first 200$startups; SIGHUP reload (from 1 route) to it$reloads"
done
