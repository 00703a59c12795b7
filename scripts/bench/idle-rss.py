#!/usr/bin/env python3
"""Memory per idle client connection: the release gateway's RSS with N idle HTTP/1.1 and then
N idle HTTP/2 connections (default 10 000 each), against its RSS with none.

    scripts/bench/idle-rss.py [--count N] [--gateway PATH]

An idle HTTP/1.1 connection has served one request and is kept alive; an idle HTTP/2
connection has sent the preface and its SETTINGS, and one request on stream 1, answered.
Needs the release binary and the bench copy's keys (scripts/bench/features.sh makes one).
Loopback only; everything it starts it stops."""
import argparse, asyncio, json, os, resource, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, ".bench-work", "bench")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def h2_frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def hpack_literal(name, value):
    # Literal header field without indexing, new name, no Huffman (RFC 7541 §6.2.2).
    def string(s):
        data = s.encode()
        assert len(data) < 127 or True
        return encode_int(len(data), 7, 0) + data
    return b"\x00" + string(name) + string(value)


def encode_int(value, prefix, first):
    limit = (1 << prefix) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


async def open_h1(port, token):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET / HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    await reader.readexactly(length)
    return writer


async def open_h2(port, token):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    block = b"".join(hpack_literal(n, v) for n, v in [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "bench"), ("authorization", f"Bearer {token}")])
    writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0) + h2_frame(1, 0x5, 1, block))
    await writer.drain()
    # Until the response's END_STREAM on stream 1 (SETTINGS and its ACK come first).
    while True:
        header = await reader.readexactly(9)
        length, kind, flags, stream = int.from_bytes(header[:3], "big"), header[3], header[4], int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
        await reader.readexactly(length)
        if kind == 4 and not flags & 1:
            writer.write(h2_frame(4, 1, 0))  # SETTINGS ACK
        if stream == 1 and kind in (0, 1) and flags & 1:
            return writer


async def open_many(opener, count, port, token):
    writers = []
    for start in range(0, count, 200):
        writers += await asyncio.gather(*(opener(port, token) for _ in range(min(200, count - start))))
    return writers


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--gateway", default=os.path.join(ROOT, ".build-release", "release", "auth-gateway"))
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    token = open(os.path.join(BENCH, "keys", "tokens", "valid-rs256.jwt")).read().strip()
    work = tempfile.mkdtemp(prefix="idle-rss-")
    backend = socket.socket()
    backend.bind(("127.0.0.1", 0))
    backend_port = backend.getsockname()[1]
    backend.close()
    nginx_conf = os.path.join(work, "nginx.conf")
    with open(nginx_conf, "w") as f:
        f.write(f"daemon off; worker_processes 1; pid {work}/nginx.pid; error_log {work}/error.log;\n"
                f"events {{ worker_connections 1024; }}\n"
                f"http {{ access_log off; client_body_temp_path {work}; proxy_temp_path {work}; fastcgi_temp_path {work}; uwsgi_temp_path {work}; scgi_temp_path {work};\n"
                f"  server {{ listen 127.0.0.1:{backend_port}; location / {{ return 200 'ok'; }} }} }}\n")
    port = 18095
    config = {
        "listener": {"host": "127.0.0.1", "port": port}, "eventLoopThreads": 1,
        "limits": {"maxConnections": args.count * 2 + 100},
        "timeouts": {"idleSeconds": 600},
        "tokens": {"issuers": [{"issuer": "https://auth.bench.local", "audiences": ["bench-gateway"], "leewaySeconds": 0,
                                "keys": [{"kid": "bench-rs256", "algorithm": "RS256", "publicKeyPEMFile": os.path.join(BENCH, "keys", "rs256-public.pem")}]}]},
        "backends": {"bench": {"urls": [f"http://127.0.0.1:{backend_port}"]}},
        "routes": [{"name": "all", "pathPrefix": "/", "backend": "bench"}],
        "logging": {"level": "warning", "accessLog": False},
    }
    config_path = os.path.join(work, "gateway.json")
    json.dump(config, open(config_path, "w"))
    nginx = subprocess.Popen(["nginx", "-c", nginx_conf, "-p", work], stderr=subprocess.DEVNULL)
    gateway = subprocess.Popen([args.gateway, "serve", "--config", config_path], stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "gateway.log"), "w"))
    try:
        for _ in range(200):
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {token}"})
                urllib.request.urlopen(request, timeout=1).read()
                break
            except Exception:
                time.sleep(0.05)
        results = {}

        async def measure():
            loop_results = {}
            base = rss_kib(gateway.pid)
            loop_results["none"] = base
            for name, opener in (("http1", open_h1), ("h2", open_h2)):
                writers = await open_many(opener, args.count, port, token)
                await asyncio.sleep(1)
                loop_results[name] = rss_kib(gateway.pid)
                for writer in writers:
                    writer.close()
                await asyncio.sleep(2)
                loop_results[name + "-after-close"] = rss_kib(gateway.pid)
            return loop_results

        results = asyncio.run(measure())
        base = results["none"]
        print(f"gateway RSS with no client connection: {base / 1024:.1f} MiB")
        for name in ("http1", "h2"):
            grown = results[name] - base if name == "http1" else results[name] - results["http1-after-close"]
            print(f"{args.count} idle {name} connections: RSS {results[name] / 1024:.1f} MiB, "
                  f"+{grown / 1024:.1f} MiB = {grown * 1024 / args.count / 1024:.1f} KiB per connection "
                  f"(after closing them: {results[name + '-after-close'] / 1024:.1f} MiB)")
    finally:
        for process in (gateway, nginx):
            process.terminate()
        for process in (gateway, nginx):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


if __name__ == "__main__":
    main()
