#!/usr/bin/env python3
"""Cost as the work grows (docs/benchmarks.md, "Cost at scale"): every curve from one script.

For each curve, N runs from 1 to its maximum; every point is a fresh release gateway (one
worker thread on CPU 1) loaded by wrk (-t1 -c32, on CPU 0, with a tiny nginx backend) and
alternated against its N = 1 partner (N first every other round), so drift falls on both sides.
Each point reports req/s, the gateway's CPU per request, its resident memory once every key is
live (after the walk below and 1 s of load), the start-up time (launch to the first 200; to
readiness for sessions), and wrk's latency p99 and maximum (a request that waits behind an
eviction or a signature check shows there). Curves:

  routes-prefix  N prefix routes, the request matching the last one
  routes-host    N host routes, the request matching the last one
  apikeys        N API keys in a keys file, each request a random one of them
  ratelimit      a rate limit by client address (X-Forwarded-For from a trusted peer) with N
                 live keys, each request a random one of them
  sessions       N local browser sessions, each request (Accept: application/json) the cookie of
                 a random one
  tokens         N distinct RS256 JWTs (make_tokens.py --unique-sub), each request a random one,
                 with verifiedCacheEntries = N: the cache full, and its fullest shards evicting
  profiles       the tokens of `tokens`, identityHeaders reading profile.user_name: N profiles in
                 a profile cache of maxEntries = N, full and evicting likewise; the profile
                 endpoint is a fixed JSON answer of the nginx backend (the demo's /v1/user knows
                 only its few users, so it could not give N profiles)

A table that must hold all N (maxKeys of the rate limit; maxSessions, and verifiedCacheEntries
for sessions and profiles) is N + N/4: each shard of a table (up to 64 for a rate limit, 16
otherwise) evicts on its own, and with a bound of exactly N the fullest shards forget keys
(measured: 100 000 keys walked twice with maxKeys 100 000, the second walk found 52 % of them).
Before counting, every key, session or token is used once, in order: a wrk script walks them
and exits wrk after N answers, all of them 200, or the run stops. wrk's requests are made
before it starts counting (wrk.format for every key), so that wrk spends little per request.

Sessions are made through the gateway's real sign-in: the navigation (302 to the provider, and
the sign-in cookie), the provider's /authorize (302 back with a code, as for a browser already
signed in there), the callback (the gateway exchanges the code at the token endpoint, checks the
ID token, creates the session), 32 browsers at a time from a thread pool. The provider is
scripts/bench/oidc_provider.py (ES256, a new user per sign-in): the demo provider filters its
whole memory of redeemed codes at every code exchange, so it slows as sessions pile up (392
sign-ins/s for the first 500, 44/s after 7 000). Here ~750 sign-ins/s (2 cores, the gateway on
one of them), so 1 000 000 sessions take ~20 min per point and round: the default curve stops
at 100 000 (~2.5 min to make); `--sizes sessions=1,1000,1000000 --rounds 1` runs the million
(~2 GiB of gateway RSS). RSS over N = 1 per session includes its access token's verified-cache
entry.

It writes the table and an SVG chart (made here, no plotting library) between the markers
`<!-- scale:begin -->` and `<!-- scale:end -->` of docs/benchmarks.md, and the chart to
docs/scale.svg. Idle connections have their own script (scripts/bench/idle-rss.py).

    scripts/bench/scale.sh [--rounds 3] [--duration 4] [--curves routes-prefix,apikeys] [--quick]
                           [--sizes sessions=1,1000,1000000] [--no-write] [--profile DIR]

--profile DIR records each point's counted load with `perf record -g` into
DIR/<curve>-<N>-r<round>.data and its request count into the same name with `.requests`, for
scripts/bench/stage-budget.py (where the cost of N goes, not only how much it is).

Needs wrk, nginx, curl, taskset and the release binary (swift build -c release --scratch-path
.build-release --product auth-gateway; GATEWAY=path overrides); sessions python3's cryptography,
tokens and profiles also joserfc (make_tokens.py). Loopback only (ports 18180, 18190, 18191,
18200); every run and wait is bounded; it stops only what it started."""
import argparse, concurrent.futures, hashlib, http.client, json, math, os, random, re, statistics, subprocess, sys
import tempfile, threading, time, urllib.parse, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GATEWAY = os.environ.get("GATEWAY", os.path.join(ROOT, ".build-release", "release", "auth-gateway"))
BACKEND_PORT, PORT, ADMIN_PORT, PROVIDER_PORT = 18180, 18190, 18191, 18200
HZ = os.sysconf("SC_CLK_TCK")
SIZES = {
    "routes-prefix": [1, 100, 1000, 10000],
    "routes-host": [1, 100, 1000, 10000],
    "apikeys": [1, 1000, 100000, 1000000],
    "ratelimit": [1, 1000, 100000],
    "sessions": [1, 1000, 10000, 100000],
    "tokens": [1, 1000, 10000, 100000],
    "profiles": [1, 1000, 10000, 100000],
}
SIGN_IN_SECONDS = 900  # the most the sessions of one point may take to make, or 4 ms a session if more


def sign_in_seconds(size):
    return max(SIGN_IN_SECONDS, size * 0.004)
BROWSER = {"Accept": "text/html", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none"}


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def config(curve, size, work):
    """The configuration of one point, the request that loads it, the wrk script that varies it
    per request (None: the same request) and the one that walks every key once (None: no keys)."""
    backend = {"b": {"urls": [f"http://127.0.0.1:{BACKEND_PORT}"], "maxConnectionsPerThread": 256}}
    base = {"listener": {"host": "127.0.0.1", "port": PORT}, "eventLoopThreads": 1, "backends": backend,
            "logging": {"level": "warning", "accessLog": False}}
    script = walk = None
    roomy = size + size // 4  # a bound no shard of the table reaches with N keys
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
        script = lua(headers, "X-API-Key", size, '"key-" .. i')
    elif curve == "ratelimit":
        base["trustedProxies"] = ["127.0.0.1/32"]
        base["rateLimits"] = [{"name": "per-client", "key": "client.ip", "requestsPerSecond": 1e9, "burst": 1000000000,
                               "maxKeys": roomy}]
        base["routes"] = [{"name": "open", "pathPrefix": "/", "backend": "b", "auth": "none"}]
        path, headers = "/items/42", {"X-Forwarded-For": address(size - 1)}
        value = 'string.format("10.%d.%d.%d", math.floor(i / 65536) % 256, math.floor(i / 256) % 256, i % 256)'
        script, walk = lua(headers, "X-Forwarded-For", size, value), lua(headers, "X-Forwarded-For", size, value, walk=True)
    elif curve == "sessions":
        base["admin"] = {"host": "127.0.0.1", "port": ADMIN_PORT}
        issuer = f"http://127.0.0.1:{PROVIDER_PORT}"
        base["tokens"] = {"issuers": [{"issuer": issuer, "discovery": True, "audiences": ["scale-api"]}],
                          "verifiedCacheEntries": roomy}
        base["browserSignIn"] = {"issuer": issuer, "clientId": "gateway", "clientSecret": "unused",
                                 "publicBaseURL": f"http://localhost:{PORT}", "scopes": ["openid"], "maxSessions": roomy}
        base["routes"] = [{"name": "app", "pathPrefix": "/", "backend": "b", "auth": "required", "signIn": True}]
        path, headers = "/items/42", {"Accept": "application/json"}
        cookies = os.path.join(work, f"cookies-{size}.txt")  # written by sign_in()
        script = lua(headers, "Cookie", size, "values[i + 1]", lines=cookies)
        walk = lua(headers, "Cookie", size, "values[i + 1]", lines=cookies, walk=True)
    elif curve in ("tokens", "profiles"):
        base["admin"] = {"host": "127.0.0.1", "port": ADMIN_PORT}
        base["tokens"] = {"issuers": [{"issuer": "https://auth.bench.local", "audiences": ["bench-gateway"], "keys": [
            {"kid": "bench-rs256", "algorithm": "RS256", "publicKeyPEMFile": os.path.join(work, "rs256-public.pem")}]}],
            "verifiedCacheEntries": size if curve == "tokens" else roomy}
        if curve == "profiles":
            base["authService"] = {"url": f"http://127.0.0.1:{BACKEND_PORT}", "profile": {
                "path": "/v1/user", "authorization": "bearer", "ttlSeconds": 3600, "staleSeconds": 3600, "maxEntries": size}}
            base["identityHeaders"] = {"X-User-Name": "profile.user_name"}
        base["routes"] = [{"name": "api", "pathPrefix": "/", "backend": "b", "auth": "required"}]
        tokens = os.path.join(work, f"tokens-{size}.txt")  # written by make_tokens()
        with open(tokens) as file:
            last = file.read().split()[-1]
        path, headers = "/items/42", {"Authorization": f"Bearer {last}"}
        value = '"Bearer " .. values[i + 1]'
        script = lua(headers, "Authorization", size, value, lines=tokens)
        walk = lua(headers, "Authorization", size, value, lines=tokens, walk=True)
    else:
        raise SystemExit(f"unknown curve {curve}")
    name = os.path.join(work, f"{curve}-{size}.json")
    with open(name, "w") as file:
        json.dump(base, file)
    return name, path, headers, script, walk


def address(index):
    return f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"


def lua(headers, header, size, value, lines=None, walk=False):
    """A wrk script sending `headers` with `header` set to `value`, a Lua expression of i (0 ≤ i <
    size; `values[i + 1]` is line i of the file `lines`): i random per request, or with `walk`
    every i in order, wrk exiting after `size` answers (status 3 if one of them was not a 200).
    The requests are made before wrk starts counting, so that wrk spends little per request."""
    fixed = "".join(f'["{name}"] = "{text}", ' for name, text in headers.items() if name != header)
    load = "" if lines is None else f'for line in io.lines("{lines}") do values[#values + 1] = line end'
    script = f"""local requests, values = {{}}, {{}}
init = function(args)
  {load}
  for i = 0, {size - 1} do
    requests[i + 1] = wrk.format(nil, nil, {{{fixed}["{header}"] = {value}}})
  end
  values = nil
end
"""
    if not walk:
        return script + f"""math.randomseed(42)
request = function()
  return requests[math.random(1, {size})]
end
"""
    return script + f"""local sent, answered, refused = 0, 0, 0
request = function()
  sent = sent + 1
  return requests[(sent - 1) % {size} + 1]
end
response = function(status)
  answered = answered + 1
  if status ~= 200 then refused = refused + 1 end
  if answered >= {size} then
    io.write(string.format("walked %d, refused %d\\n", answered, refused))
    io.flush()
    os.exit(refused == 0 and 0 or 3)
  end
end
"""


def urllib_status(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except OSError:
        return None


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
    """(req/s, whether there were socket errors, latency p99 ms, latency max ms)."""
    arguments = ["taskset", "-c", "0", "wrk", "-t1", "-c32", f"-d{seconds}s", "--latency"]
    for name, value in headers.items():
        arguments += ["-H", f"{name}: {value}"]
    if script:
        lua = os.path.join(work, "random.lua")
        with open(lua, "w") as file:
            file.write(script)
        arguments += ["-s", lua]
    arguments.append(f"http://127.0.0.1:{PORT}{path}")
    done = subprocess.run(arguments, capture_output=True, text=True, timeout=seconds + 30)
    output = done.stdout
    if done.stderr.strip():  # a script wrk could not run: it goes on with the plain request
        raise SystemExit(f"wrk: {done.stderr}")
    if "Non-2xx" in output:
        raise SystemExit(f"non-2xx answers under load:\n{output}")
    rate = float(re.search(r"Requests/sec:\s*([\d.]+)", output).group(1))
    p99 = milliseconds(re.search(r"\s99%\s+([\d.]+\w+)", output).group(1))
    maximum = milliseconds(re.search(r"Latency\s+\S+\s+\S+\s+([\d.]+\w+)", output).group(1))
    return rate, "Socket errors" in output, p99, maximum


def milliseconds(text):
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]


def walk_keys(path, headers, script, size, work):
    """Every key once, in order (`script` exits wrk after `size` answers, all 200)."""
    lua = os.path.join(work, "walk.lua")
    with open(lua, "w") as file:
        file.write(script)
    seconds = 30 + size // 1000  # a bound: a walk runs at several thousand requests a second
    arguments = ["taskset", "-c", "0", "wrk", "-t1", "-c32", f"-d{seconds}s", "-s", lua]
    for name, value in headers.items():
        arguments += ["-H", f"{name}: {value}"]
    done = subprocess.run(arguments + [f"http://127.0.0.1:{PORT}{path}"], capture_output=True, text=True,
                          timeout=seconds + 30)
    if done.returncode != 0 or f"walked {size}," not in done.stdout:
        raise SystemExit(f"the walk of {size} keys did not end with {size} answers of 200:\n{done.stdout}{done.stderr}")


def sign_in(size, work):
    """`size` sessions through the gateway's sign-in, 32 browsers at a time; their cookies into
    cookies-<size>.txt, one a line."""
    local, deadline = threading.local(), time.monotonic() + sign_in_seconds(size)

    def fetch(port, target, headers):
        connections = local.__dict__.setdefault("connections", {})
        for attempt in (1, 2):  # once more on a new connection when a kept-alive one was closed
            if port not in connections:
                connections[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                connections[port].request("GET", target, headers=headers)
                response = connections[port].getresponse()
                response.read()
                return response
            except (http.client.HTTPException, OSError):
                connections.pop(port).close()
                if attempt == 2:
                    raise

    def cookies(response):
        pairs = (value.split(";")[0].partition("=") for value in response.headers.get_all("Set-Cookie") or [])
        return {name.strip(): value for name, _, value in pairs if value}

    def browser(_):
        if time.monotonic() > deadline:
            raise RuntimeError(f"more than {sign_in_seconds(size):.0f} s to make {size} sessions")
        navigation = fetch(PORT, "/items/42", BROWSER)
        assert navigation.status == 302, f"navigation: {navigation.status}"
        authorize = urllib.parse.urlsplit(navigation.headers["Location"])
        provider = fetch(PROVIDER_PORT, f"{authorize.path}?{authorize.query}", BROWSER)
        assert provider.status == 302, f"authorize: {provider.status}"
        callback = urllib.parse.urlsplit(provider.headers["Location"])
        jar = "; ".join(f"{name}={value}" for name, value in cookies(navigation).items())
        answer = fetch(PORT, f"{callback.path}?{callback.query}", dict(BROWSER, Cookie=jar))
        assert answer.status == 302, f"callback: {answer.status}"
        session = [f"{name}={value}" for name, value in cookies(answer).items() if "session" in name]
        assert session, "no session cookie"
        return "; ".join(session)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        made = list(pool.map(browser, range(size), chunksize=64))
    with open(os.path.join(work, f"cookies-{size}.txt"), "w") as file:
        file.write("\n".join(made) + "\n")
    if size > 1:
        log(f"sessions {size}: {size / (time.monotonic() - started):.0f} sign-ins/s")


def gauges():
    """What the admin listener's /metrics says: table sizes and profile lookups by result."""
    found = {}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ADMIN_PORT}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return found
    for line in text.splitlines():
        for name, label in [("auth_gateway_sessions", "sessions"), ("auth_gateway_verified_token_cache_entries",
                             "verified tokens"), ("auth_gateway_profile_cache_total", "profile lookups")]:
            if line.startswith(name):
                result = re.search(r'result="(\w+)"', line)
                key = f"{label} ({result.group(1)})" if result else label
                found[key] = found.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return found


def profile(pid, curve, size, arguments):
    """`perf record` of `pid` for the counted load's duration (it stops by itself)."""
    os.makedirs(arguments.profile, exist_ok=True)
    data = os.path.join(arguments.profile, f"{curve}-{size}-r{arguments.round}.data")
    recorder = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(pid), "-o", data, "--",
                                 "sleep", str(arguments.duration)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    recorder.data = data
    return recorder


def point(curve, size, arguments, work):
    """One fresh gateway: (req/s, CPU µs per request, RSS KiB, start-up ms, p99 ms, max ms)."""
    name, path, headers, script, warm = config(curve, size, work)
    probe = ("/readyz", {}) if curve == "sessions" else (path, headers)  # no 200 without a session
    for attempt in range(3):
        started = time.monotonic()
        gateway = subprocess.Popen(["taskset", "-c", "1", GATEWAY, "serve", "--config", name],
                                   stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "gateway.log"), "w"))
        try:
            deadline = started + 60
            while get(*probe) != 200:
                if time.monotonic() > deadline or gateway.poll() is not None:
                    raise SystemExit(f"{curve} {size}: no 200; see {work}/gateway.log")
                time.sleep(0.01)
            startup_ms = (time.monotonic() - started) * 1000
            if curve == "sessions":
                sign_in(size, work)
            if warm:  # every key live before counting
                walk_keys(path, headers, warm, size, work)
            wrk(path, headers, 1, script, work)
            rss = rss_kib(gateway.pid)
            counted = gauges() if curve in ("sessions", "tokens", "profiles") else None
            before = cpu_ticks(gateway.pid)
            recorder = profile(gateway.pid, curve, size, arguments) if arguments.profile else None
            rate, errors, p99, maximum = wrk(path, headers, arguments.duration, script, work)
            cpu = cpu_ticks(gateway.pid) - before
            if recorder:
                recorder.wait(timeout=arguments.duration + 60)
                with open(recorder.data + ".requests", "w") as file:
                    file.write(f"{rate * arguments.duration:.0f}\n")
            if counted is not None:  # tables held after the load, lookups during it
                after = gauges()
                log(f"{curve} {size}: " + ", ".join(f"{key} {value - counted.get(key, 0) if 'lookups' in key else value:.0f}"
                                                    for key, value in after.items()))
        finally:
            gateway.terminate()
            try:
                gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait(timeout=20)
        if not errors:
            return rate, cpu / HZ / (rate * arguments.duration) * 1e6, rss, startup_ms, p99, maximum
        log(f"{curve} {size}: socket errors, run again")
    raise SystemExit(f"{curve} {size}: socket errors three times")


def make_tokens(curves, work):
    """An RS256 key pair, and tokens-<N>.txt: N distinct tokens, each its own sub, for every N."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with open(os.path.join(work, "rs256-private.pem"), "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    with open(os.path.join(work, "rs256-public.pem"), "wb") as file:
        file.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    sizes = sorted({size for curve in curves if curve in ("tokens", "profiles") for size in SIZES[curve]})
    started, every = time.monotonic(), os.path.join(work, "tokens.txt")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "make_tokens.py"), work, "RS256",
                    str(sizes[-1]), every, "--unique-sub"], check=True, timeout=1800)
    log(f"{sizes[-1]} tokens made in {time.monotonic() - started:.0f} s")
    with open(every) as file:
        tokens = file.read().split()
    for size in sizes:
        with open(os.path.join(work, f"tokens-{size}.txt"), "w") as file:
            file.write("\n".join(tokens[:size]) + "\n")


def chart(results, curves):
    """A line chart of the req/s ratio to N = 1 against log10 N, one line per curve."""
    width, height, left, bottom, top, right = 640, 320, 56, 40, 20, 150
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
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
    parser.add_argument("--profile", metavar="DIR", help="perf record each counted load into DIR")
    parser.add_argument("--sizes", action="append", default=[], metavar="CURVE=1,1000,…",
                        help="the points of one curve instead of its default (1 first); e.g. sessions=1,1000,1000000")
    arguments = parser.parse_args()
    for choice in arguments.sizes:
        curve, _, sizes = choice.partition("=")
        if curve not in SIZES or not sizes:
            raise SystemExit(f"--sizes {choice}: expected one of {', '.join(SIZES)}=1,…")
        SIZES[curve] = sorted({1} | {int(size) for size in sizes.split(",")})
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
  server {{ listen 127.0.0.1:{BACKEND_PORT}; location / {{ return 200 "ok\\n"; }}
    location = /v1/user {{ default_type application/json; return 200 '{{"user_id":"u","user_name":"bench"}}'; }} }} }}
""")
    nginx = subprocess.Popen(["taskset", "-c", "0", "nginx", "-p", f"{work}/nginx/", "-c", f"{work}/nginx/nginx.conf",
                              "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    provider = None
    if "sessions" in curves:
        provider = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts", "bench", "oidc_provider.py"),
                                     str(PROVIDER_PORT), "gateway", "scale-api"], stderr=open(f"{work}/provider.log", "w"))
    results, details = {}, {}
    try:
        if any(curve in ("tokens", "profiles") for curve in curves):
            make_tokens(curves, work)
        if provider:
            deadline = time.monotonic() + 30
            while urllib_status(f"http://127.0.0.1:{PROVIDER_PORT}/.well-known/openid-configuration") != 200:
                if time.monotonic() > deadline or provider.poll() is not None:
                    raise SystemExit(f"the provider did not start; see {work}/provider.log")
                time.sleep(0.05)
        for round in range(1, arguments.rounds + 1):
            arguments.round = round
            for curve in curves:
                for size in SIZES[curve][1:]:
                    pair = [1, size] if round % 2 else [size, 1]
                    measured = {n: point(curve, n, arguments, work) for n in pair}
                    results.setdefault((curve, size), []).append((measured[size][0], measured[1][0]))
                    details.setdefault((curve, size), []).append(measured[size])
                    details.setdefault((curve, 1), []).append(measured[1])
                    log(f"round {round} {curve} N={size}: {measured[size][0]:.0f} req/s vs {measured[1][0]:.0f} at N=1")
    finally:
        for child in filter(None, [nginx, provider]):
            child.terminate()
            child.wait(timeout=20)
    rows = ["| curve | N | req/s | ratio to N = 1 (median of pairs) | CPU µs/request | RSS MiB | RSS over N = 1, bytes per item | start-up ms | p99 ms | max ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for curve in curves:
        base_rss = statistics.median(d[2] for d in details[(curve, 1)])
        for size in SIZES[curve]:
            runs = details[(curve, size)]
            ratio = "1" if size == 1 else f"{statistics.median(r / b for r, b in results[(curve, size)]):.3f}"
            rss = statistics.median(d[2] for d in runs)
            per_item = "" if size == 1 else f"{(rss - base_rss) * 1024 / (size - 1):.0f}"
            rows.append(f"| {curve} | {size:,} | {statistics.median(d[0] for d in runs):.0f} | {ratio} | "
                        f"{statistics.median(d[1] for d in runs):.2f} | {rss / 1024:.1f} | {per_item} | "
                        f"{statistics.median(d[3] for d in runs):.0f} | {statistics.median(d[4] for d in runs):.2f} | "
                        f"{max(d[5] for d in runs):.1f} |")
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
