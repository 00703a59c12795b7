#!/usr/bin/env python3
"""A minimal RFC 7662 introspection endpoint for the cached-introspection benchmark: every
token is active (sub bench-user-42, exp 2100-01-01). Counts the calls it answers and prints the
count when stopped (SIGTERM/SIGINT). python3 introspection_endpoint.py PORT"""
import json, signal, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

calls = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global calls
        calls += 1
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps({"active": True, "sub": "bench-user-42", "exp": 4102444800, "scope": "read:items write:items",
                           "iss": "https://auth.bench.local", "aud": "bench-gateway"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def stop(*_):
    print(f"introspection calls answered: {calls}", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
