#!/usr/bin/env python3
"""What a SIGHUP reload of N API keys costs in memory (docs/policies.md, "API keys"): the release
gateway's RSS after start-up, its peak while reloading the same keys file, and its RSS once the
reload is done (the old table's pages returned), over several reloads.

    scripts/bench/reload-memory.py [--keys 1000000] [--reloads 3] [--gateway PATH]

Every reload is confirmed by auth_gateway_config_reloads_total on the admin listener, not by a
sleep. Loopback only (ports 18390-18392); every wait is bounded; it stops only what it started."""
import argparse, hashlib, json, os, re, signal, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def status(pid, field):
    with open(f"/proc/{pid}/status") as text:
        for line in text:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field}")


def reloads(admin):
    text = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5).read().decode()
    match = re.search(r'auth_gateway_config_reloads_total\{result="success"\} (\d+)', text)
    return int(match.group(1)) if match else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--reloads", type=int, default=3)
    parser.add_argument("--gateway", default=os.path.join(ROOT, ".build-release", "release", "auth-gateway"))
    arguments = parser.parse_args()
    work = tempfile.mkdtemp(prefix="reload-memory-")
    keys = [{"id": f"m{i}", "sha256": hashlib.sha256(f"key-{i}".encode()).hexdigest(), "claims": {"sub": f"m{i}"}}
            for i in range(arguments.keys)]
    with open(os.path.join(work, "keys.json"), "w") as file:
        json.dump(keys, file)
    del keys
    port, admin = 18390, 18391
    config = {"listener": {"host": "127.0.0.1", "port": port}, "admin": {"host": "127.0.0.1", "port": admin},
              "eventLoopThreads": 1, "backends": {"b": {"urls": ["http://127.0.0.1:18392"]}},
              "logging": {"level": "warning", "accessLog": False}, "tokens": {"apiKeys": {"keysFile": "keys.json"}},
              "routes": [{"name": "api", "pathPrefix": "/", "backend": "b", "auth": "required"}]}
    with open(os.path.join(work, "gateway.json"), "w") as file:
        json.dump(config, file)
    gateway = subprocess.Popen([arguments.gateway, "serve", "--config", os.path.join(work, "gateway.json")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                reloads(admin)
                break
            except OSError:
                if time.monotonic() > deadline or gateway.poll() is not None:
                    raise SystemExit("the gateway did not start")
                time.sleep(0.05)
        print(f"{arguments.keys} keys: RSS after start {status(gateway.pid, 'VmRSS') / 1024:.0f} MiB, "
              f"peak so far {status(gateway.pid, 'VmHWM') / 1024:.0f} MiB")
        for number in range(1, arguments.reloads + 1):
            before = reloads(admin)
            gateway.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 60
            while reloads(admin) <= before:
                if time.monotonic() > deadline:
                    raise SystemExit("the reload was not counted")
                time.sleep(0.05)
            time.sleep(1)  # the trim runs once every loop has swapped: a second is ample
            print(f"reload {number}: RSS after {status(gateway.pid, 'VmRSS') / 1024:.0f} MiB, "
                  f"peak so far {status(gateway.pid, 'VmHWM') / 1024:.0f} MiB")
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)
        for name in os.listdir(work):
            os.remove(os.path.join(work, name))
        os.rmdir(work)


if __name__ == "__main__":
    main()
