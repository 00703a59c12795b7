#!/usr/bin/env python3
"""Cost as the work grows (docs/benchmarks.md, "Cost at scale"): every curve from one script.

For each curve, N runs from 1 to its maximum; every point is a fresh release gateway (one
worker thread on CPU 1) loaded by wrk (-t1 -c32, on CPU 0, with a tiny nginx backend) and
alternated against its N = 1 partner (N first every other round), so drift falls on both sides.
Each point reports req/s, the gateway's CPU per request, its resident memory after start-up and
the start-up time (launch to the first 200). Curves:

  routes-prefix  N prefix routes, the request matching the last one
  routes-host    N host routes, the request matching the last one
  apikeys        N API keys in a keys file, each request a random one of them
  ratelimit      a rate limit by client address (X-Forwarded-For from a trusted peer) with N
                 live keys, each request a random one of them (every key warmed first)

It writes the table and an SVG chart (made here, no plotting library) between the markers
`<!-- scale:begin -->` and `<!-- scale:end -->` of docs/benchmarks.md, and the chart to
docs/scale.svg. Idle connections have their own script (scripts/bench/idle-rss.py).

    scripts/bench/scale.sh [--rounds 3] [--duration 4] [--curves routes-prefix,apikeys] [--quick]

Needs wrk, nginx, curl, taskset and the release binary (swift build -c release --scratch-path
.build-release --product auth-gateway; GATEWAY=path overrides). Loopback only (ports 18180 and 18190); every run and wait
is bounded; it stops only what it started."""
import argparse, hashlib, json, math, os, random, re, statistics, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GATEWAY = os.environ.get("GATEWAY", os.path.join(ROOT, ".build-release", "release", "auth-gateway"))
BACKEND_PORT, PORT = 18180, 18190
HZ = os.sysconf("SC_CLK_TCK")
SIZES = {
    "routes-prefix": [1, 100, 1000, 10000],
    "routes-host": [1, 100, 1000, 10000],
    "apikeys": [1, 1000, 100000, 1000000],
    "ratelimit": [1, 1000, 100000],
}


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def config(curve, size, work):
    """The configuration of one point, and the wrk arguments that load it."""
    backend = {"b": {"urls": [f"http://127.0.0.1:{BACKEND_PORT}"], "maxConnectionsPerThread": 256}}
    base = {"listener": {"host": "127.0.0.1", "port": PORT}, "eventLoopThreads": 1, "backends": backend,
            "logging": {"level": "warning", "accessLog": False}}
    script = None
    if curve == "routes-prefix":
        base["routes"] = [{"name": f"r{i}", "pathPrefix": f"/service-{i}/", "backend": "b", "auth": "none"}
                          for i in range(size)]
        path, headers = f"/service-{size - 1}/items/42", {"Host": "bench.example.com"}
    elif curve == "routes-host":
        base["routes"] = [{"name": f"r{i}", "host": f"host-{i}.example.com", "pathPrefix": "/", "backend": "b",
                           "auth": "none"} for i in range(size)]
        path, headers = "/items/42", {"Host": f"host-{size - 1}.example.com"}
    elif curve == "apikeys":
        keys = [{"id": f"m{i}", "sha256": hashlib.sha256(f"key-{i}".encode()).hexdigest(), "claims": {"sub": f"m{i}"}}
                for i in range(size)]
        with open(os.path.join(work, f"keys-{size}.json"), "w") as file:
            json.dump(keys, file)
        base["tokens"] = {"apiKeys": {"keysFile": f"keys-{size}.json"}}
        base["routes"] = [{"name": "api", "pathPrefix": "/", "backend": "b", "auth": "required"}]
        path, headers = "/items/42", {"X-API-Key": f"key-{size - 1}"}
        script = lua_random_header("X-API-Key", "key-", size)
    elif curve == "ratelimit":
        base["trustedProxies"] = ["127.0.0.1/32"]
        base["rateLimits"] = [{"name": "per-client", "key": "client.ip", "requestsPerSecond": 1e9, "burst": 1000000000,
                               "maxKeys": max(size, 1)}]
        base["routes"] = [{"name": "open", "pathPrefix": "/", "backend": "b", "auth": "none"}]
        path, headers = "/items/42", {"X-Forwarded-For": address(size - 1)}
        script = lua_random_header("X-Forwarded-For", None, size)
    else:
        raise SystemExit(f"unknown curve {curve}")
    name = os.path.join(work, f"{curve}-{size}.json")
    with open(name, "w") as file:
        json.dump(base, file)
    return name, path, headers, script


def address(index):
    return f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"


def lua_random_header(header, prefix, size):
    """A wrk script sending `header` with a random one of `size` values per request."""
    if prefix is None:
        value = ('string.format("10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255)')
    else:
        value = f'"{prefix}" .. i'
    return f"""
math.randomseed(42)
request = function()
  local i = math.random(0, {size - 1})
  return wrk.format(nil, nil, {{["{header}"] = {value}}})
end
"""


def get(path, headers):
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wrk(path, headers, seconds, script, work):
    arguments = ["taskset", "-c", "0", "wrk", "-t1", "-c32", f"-d{seconds}s"]
    for name, value in headers.items():
        arguments += ["-H", f"{name}: {value}"]
    if script:
        lua = os.path.join(work, "random.lua")
        with open(lua, "w") as file:
            file.write(script)
        arguments += ["-s", lua]
    arguments.append(f"http://127.0.0.1:{PORT}{path}")
    output = subprocess.run(arguments, capture_output=True, text=True, timeout=seconds + 30).stdout
    if "Non-2xx" in output:
        raise SystemExit(f"non-2xx answers under load:\n{output}")
    rate = float(re.search(r"Requests/sec:\s*([\d.]+)", output).group(1))
    return rate, "Socket errors" in output


def point(curve, size, arguments, work):
    """One fresh gateway: (req/s, CPU µs per request, RSS KiB, start-up ms)."""
    name, path, headers, script = config(curve, size, work)
    for attempt in range(3):
        started = time.monotonic()
        gateway = subprocess.Popen(["taskset", "-c", "1", GATEWAY, "serve", "--config", name],
                                   stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "gateway.log"), "w"))
        try:
            deadline = started + 60
            while get(path, headers) != 200:
                if time.monotonic() > deadline or gateway.poll() is not None:
                    raise SystemExit(f"{curve} {size}: no 200; see {work}/gateway.log")
                time.sleep(0.01)
            startup_ms = (time.monotonic() - started) * 1000
            if curve == "ratelimit":  # every key live before counting
                warm = [f"{address(i)}" for i in range(size)]
                for value in warm[:: max(1, size // 2000)]:
                    get(path, {"X-Forwarded-For": value})
            wrk(path, headers, 1 if curve != "ratelimit" else max(1, min(10, size // 20000)), script, work)
            rss = rss_kib(gateway.pid)
            before = cpu_ticks(gateway.pid)
            rate, errors = wrk(path, headers, arguments.duration, script, work)
            cpu = cpu_ticks(gateway.pid) - before
        finally:
            gateway.terminate()
            try:
                gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait(timeout=20)
        if not errors:
            return rate, cpu / HZ / (rate * arguments.duration) * 1e6, rss, startup_ms
        log(f"{curve} {size}: socket errors, run again")
    raise SystemExit(f"{curve} {size}: socket errors three times")


def chart(results, curves):
    """A line chart of the req/s ratio to N = 1 against log10 N, one line per curve."""
    width, height, left, bottom, top, right = 640, 320, 56, 40, 20, 150
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
    low, high = 0.5, 1.1
    maximum = max(max(SIZES[c]) for c in curves)
    x_of = lambda n: left + (width - left - right) * math.log10(n) / math.log10(maximum)
    y_of = lambda r: top + (height - top - bottom) * (high - max(low, min(high, r))) / (high - low)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             'font-size="11"><rect width="100%" height="100%" fill="white"/>']
    for ratio in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1):
        y = y_of(ratio)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{ratio:.1f}</text>')
    y = y_of(0.95)
    parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#888" '
                 'stroke-dasharray="4 3"/>')
    for exponent in range(0, int(math.log10(maximum)) + 1):
        x = x_of(10 ** exponent)
        parts.append(f'<text x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle">{10 ** exponent:,}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 6}" text-anchor="middle">N (log scale)</text>')
    parts.append(f'<text x="14" y="{top + (height - top - bottom) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {top + (height - top - bottom) / 2})">req/s ÷ req/s at N = 1</text>')
    for index, curve in enumerate(curves):
        color = colors[index % len(colors)]
        points = [(1, 1.0)] + [(size, statistics.median(r / b for r, b in results[(curve, size)]))
                               for size in SIZES[curve][1:]]
        line = " ".join(f"{x_of(n):.1f},{y_of(r):.1f}" for n, r in points)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts += [f'<circle cx="{x_of(n):.1f}" cy="{y_of(r):.1f}" r="3" fill="{color}"/>' for n, r in points]
        parts.append(f'<text x="{width - right + 10}" y="{top + 16 * index + 10}" fill="{color}">{curve}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=4)
    parser.add_argument("--curves", default=",".join(SIZES))
    parser.add_argument("--quick", action="store_true", help="one round of 2 s, to try the script")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/ alone")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.rounds, arguments.duration = 1, 2
    curves = arguments.curves.split(",")
    if not os.access(GATEWAY, os.X_OK):
        raise SystemExit(f"no release gateway at {GATEWAY}: swift build -c release --scratch-path .build-release --product auth-gateway")
    work = tempfile.mkdtemp(prefix="scale-")
    os.makedirs(f"{work}/nginx/logs")
    with open(f"{work}/nginx/nginx.conf", "w") as file:
        file.write(f"""worker_processes 1; pid {work}/nginx/nginx.pid; error_log {work}/nginx/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{ access_log off; keepalive_requests 10000000; client_body_temp_path {work}/nginx/body;
  proxy_temp_path {work}/nginx/proxy; fastcgi_temp_path {work}/nginx/fcgi; uwsgi_temp_path {work}/nginx/uwsgi;
  scgi_temp_path {work}/nginx/scgi;
  server {{ listen 127.0.0.1:{BACKEND_PORT}; location / {{ return 200 "ok\\n"; }} }} }}
""")
    nginx = subprocess.Popen(["taskset", "-c", "0", "nginx", "-p", f"{work}/nginx/", "-c", f"{work}/nginx/nginx.conf",
                              "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results, details = {}, {}
    try:
        for round in range(1, arguments.rounds + 1):
            for curve in curves:
                for size in SIZES[curve][1:]:
                    pair = [1, size] if round % 2 else [size, 1]
                    measured = {n: point(curve, n, arguments, work) for n in pair}
                    results.setdefault((curve, size), []).append((measured[size][0], measured[1][0]))
                    details.setdefault((curve, size), []).append(measured[size])
                    details.setdefault((curve, 1), []).append(measured[1])
                    log(f"round {round} {curve} N={size}: {measured[size][0]:.0f} req/s vs {measured[1][0]:.0f} at N=1")
    finally:
        nginx.terminate()
        nginx.wait(timeout=20)
    rows = ["| curve | N | req/s | ratio to N = 1 (median of pairs) | CPU µs/request | RSS MiB | RSS over N = 1, bytes per item | start-up ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for curve in curves:
        base_rss = statistics.median(d[2] for d in details[(curve, 1)])
        for size in SIZES[curve]:
            runs = details[(curve, size)]
            ratio = "1" if size == 1 else f"{statistics.median(r / b for r, b in results[(curve, size)]):.3f}"
            rss = statistics.median(d[2] for d in runs)
            per_item = "" if size == 1 else f"{(rss - base_rss) * 1024 / (size - 1):.0f}"
            rows.append(f"| {curve} | {size:,} | {statistics.median(d[0] for d in runs):.0f} | {ratio} | "
                        f"{statistics.median(d[1] for d in runs):.2f} | {rss / 1024:.1f} | {per_item} | "
                        f"{statistics.median(d[3] for d in runs):.0f} |")
    stamp = (f"Measured {time.strftime('%Y-%m-%d')} at "
             f"{subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}"
             f", {arguments.rounds} rounds of {arguments.duration} s per point, one worker thread.")
    table = "\n".join(rows)
    print(stamp + "\n\n" + table)
    if arguments.no_write:
        return
    with open(os.path.join(ROOT, "docs", "scale.svg"), "w") as file:
        file.write(chart(results, curves))
    page = os.path.join(ROOT, "docs", "benchmarks.md")
    text = open(page).read()
    block = f"<!-- scale:begin -->\n{stamp}\n\n![req/s against N](scale.svg)\n\n{table}\n<!-- scale:end -->"
    if "<!-- scale:begin -->" in text:
        text = re.sub(r"<!-- scale:begin -->.*?<!-- scale:end -->", lambda _: block, text, flags=re.S)
    else:
        text += "\n" + block + "\n"
    open(page, "w").write(text)
    log("wrote docs/benchmarks.md and docs/scale.svg")


if __name__ == "__main__":
    main()
