#!/usr/bin/env python3
"""Many WebSocket tunnels through one gateway instance, and the revocation of one subject
(docs/streams.md, "Cost"): the gateway's memory per open tunnel, and how long a Shared Signals
`session-revoked` for one subject takes to close that subject's tunnels — and only those.

    scripts/bench/websocket-tunnels.py [--tunnels N] [--subjects S] [--gateway PATH]

It starts (all on 127.0.0.1, all stopped at the end):
  - a WebSocket echo backend (Tests/AuthGatewayTests/Fixtures/websocket/ws_peer.py server);
  - `auth-gateway serve` (default .build/release/auth-gateway, else .build/debug/auth-gateway)
    with one event loop, route `live` to the backend, the Shared Signals receiver, and an issuer
    whose RSA key this script makes (joserfc);
then opens N tunnels (tunnel i with a token of subject user-<i mod S>, valid for an hour),
reads the gateway's RSS before and after, posts one SET revoking every session of user-7, and
measures when each of user-7's tunnels got its 1008 close frame, and whether any other did.

Each tunnel holds two descriptors in the gateway (client and backend): the gateway needs
RLIMIT_NOFILE above 2N + 100. The script raises its soft limit to the hard one (children
inherit it) and lowers N to fit when the hard limit is lower, saying so.
Needs Python websockets and joserfc. Bounded: everything stops within --timeout seconds.
"""
import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from joserfc import jws, jwt
from joserfc.jwk import RSAKey
from websockets.asyncio.client import connect

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, "Tests/AuthGatewayTests/Fixtures/websocket/ws_peer.py")
ISSUER = "https://issuer.bench.local"
AUDIENCE = "bench-gateway"


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def post_set(url, token):
    request = urllib.request.Request(url, data=token.encode(), method="POST",
                                     headers={"Content-Type": "application/secevent+jwt"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


async def open_tunnels(port, tokens, count):
    tunnels = []
    for start in range(0, count, 100):
        batch = [connect(f"ws://127.0.0.1:{port}/live/{index}",
                         additional_headers={"Authorization": "Bearer " + tokens[index]},
                         ping_interval=None, open_timeout=120, close_timeout=2)
                 for index in range(start, min(count, start + 100))]
        try:
            tunnels += await asyncio.gather(*batch)
        except Exception as error:
            raise SystemExit(f"tunnel {start}…{start + len(batch)} refused after {len(tunnels)} opened: {error}")
    return tunnels


async def run(arguments, gateway_pid, port, admin_port, key, subjects):
    tokens = []
    now = int(time.time())
    for index in range(arguments.tunnels):
        claims = {"iss": ISSUER, "sub": f"user-{index % subjects}", "aud": AUDIENCE, "iat": now, "exp": now + 3600,
                  "jti": uuid.uuid4().hex}
        tokens.append(jwt.encode({"alg": "RS256", "kid": "bench"}, claims, key))
    before = rss_kib(gateway_pid)
    opened_at = time.monotonic()
    tunnels = await open_tunnels(port, tokens, arguments.tunnels)
    opening = time.monotonic() - opened_at
    # Every tunnel carries one message each way before the measurement.
    await asyncio.gather(*(tunnel.send("hello") for tunnel in tunnels))
    await asyncio.gather(*(tunnel.recv() for tunnel in tunnels))
    await asyncio.sleep(1)
    after = rss_kib(gateway_pid)
    metrics = http_get(f"http://127.0.0.1:{admin_port}/metrics")
    gauge = [line for line in metrics.splitlines() if line.startswith('auth_gateway_open_streams{route="live"}')]

    closed = {}

    async def watch(index, tunnel):
        await tunnel.wait_closed()
        received = tunnel.protocol.close_rcvd
        closed[index] = (time.monotonic(), received.code if received else None)

    watchers = [asyncio.ensure_future(watch(index, tunnel)) for index, tunnel in enumerate(tunnels)]
    target = 7 % subjects
    named = {index for index in range(arguments.tunnels) if index % subjects == target}
    set_claims = {"iss": ISSUER, "aud": AUDIENCE, "iat": int(time.time()), "jti": uuid.uuid4().hex,
                  "sub_id": {"format": "iss_sub", "iss": ISSUER, "sub": f"user-{target}"},
                  "events": {"https://schemas.openid.net/secevent/caep/event-type/session-revoked": {}}}
    token = jws.serialize_compact({"alg": "RS256", "kid": "bench", "typ": "secevent+jwt"},
                                  json.dumps(set_claims).encode(), key)
    sent = time.monotonic()
    status = await asyncio.get_running_loop().run_in_executor(
        None, post_set, f"http://127.0.0.1:{port}/.gateway/signals", token)
    deadline = sent + 10
    while time.monotonic() < deadline and not named.issubset(closed):
        await asyncio.sleep(0.01)
    # Any other tunnel closing would show up in the next two seconds.
    await asyncio.sleep(2)
    latencies = sorted(closed[index][0] - sent for index in named if index in closed)
    report = {
        "tunnels": arguments.tunnels,
        "opening_seconds": round(opening, 2),
        "gateway_rss_kib_before": before,
        "gateway_rss_kib_after": after,
        "kib_per_tunnel": round((after - before) / arguments.tunnels, 2),
        "open_streams_gauge": gauge,
        "signal_status": status,
        "named_tunnels": len(named),
        "named_closed_with_1008": sum(1 for index in named if closed.get(index, (0, None))[1] == 1008),
        "others_closed": sorted(index for index in closed if index not in named)[:10],
        "others_closed_count": sum(1 for index in closed if index not in named),
        "close_latency_seconds": {"min": round(latencies[0], 3) if latencies else None,
                                  "max": round(latencies[-1], 3) if latencies else None},
    }
    for watcher in watchers:
        watcher.cancel()
    for tunnel in tunnels:
        tunnel.transport.abort()
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tunnels", type=int, default=10_000)
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--gateway", default=None)
    parser.add_argument("--timeout", type=float, default=600)
    arguments = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    fitting = (hard - 200) // 2
    if arguments.tunnels > fitting:
        print(f"RLIMIT_NOFILE's hard limit is {hard}: the gateway can hold {fitting} tunnels, not "
              f"{arguments.tunnels}; measuring {fitting}", file=sys.stderr)
        arguments.tunnels = fitting
    gateway = arguments.gateway or next(
        (path for path in (os.path.join(ROOT, ".build/release/auth-gateway"), os.path.join(ROOT, ".build/debug/auth-gateway"))
         if os.path.exists(path)), None)
    if gateway is None:
        raise SystemExit("build the gateway first: swift build -c release --product auth-gateway")
    work = tempfile.mkdtemp(prefix="bench-tunnels-")
    key = RSAKey.generate_key(2048, private=True)
    port, admin_port = free_ports(2)
    children = []
    try:
        # Its event lines go to a file (a pipe nobody drains would stall it).
        events = os.path.join(work, "backend.out")
        backend = subprocess.Popen([sys.executable, PEER, "server"], stdout=open(events, "w"), stderr=subprocess.DEVNULL)
        children.append(backend)
        wait_for(lambda: open(events).readline().startswith("READY "), 60, "the backend")
        backend_port = int(open(events).readline().split()[1])
        config = {
            "listener": {"host": "127.0.0.1", "port": port},
            "admin": {"host": "127.0.0.1", "port": admin_port},
            "eventLoopThreads": 1,
            "limits": {"maxConnections": arguments.tunnels + 100},
            "timeouts": {"idleSeconds": 3600},
            "tokens": {"issuers": [{"issuer": ISSUER, "audiences": [AUDIENCE],
                                    "keys": [{"kid": "bench", "algorithm": "RS256",
                                              "publicKeyPEM": key.as_pem(private=False).decode()}]}]},
            "backends": {"ws": {"urls": [f"http://127.0.0.1:{backend_port}"], "maxConnectionsPerThread": arguments.tunnels + 100}},
            "routes": [{"name": "live", "pathPrefix": "/live/", "backend": "ws"}],
            "signals": {"issuer": ISSUER, "audience": AUDIENCE},
            "logging": {"accessLog": False, "level": "warning"},
        }
        path = os.path.join(work, "gateway.json")
        with open(path, "w") as handle:
            json.dump(config, handle)
        server = subprocess.Popen([gateway, "serve", "--config", path], stdout=subprocess.DEVNULL,
                                  stderr=open(os.path.join(work, "gateway.err"), "w"))
        children.append(server)
        wait_for(lambda: _ready(f"http://127.0.0.1:{port}/readyz"), 120, "the gateway to be ready")
        report = asyncio.run(asyncio.wait_for(
            run(arguments, server.pid, port, admin_port, key, arguments.subjects), arguments.timeout))
        report["gateway"] = gateway
        print(json.dumps(report, indent=2))
    except SystemExit:
        errors = os.path.join(work, "gateway.err")
        if os.path.exists(errors):
            print(open(errors).read()[-3000:], file=sys.stderr)
        raise
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _ready(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except Exception:
        return False


if __name__ == "__main__":
    main()
