#!/usr/bin/env python3
"""Python's http.server as a backend that says which "location" serves a request, reading the
path exactly as `http.server.SimpleHTTPRequestHandler.translate_path` does (every escape
decoded, `%2F` included, then `posixpath.normpath`): a third way of reading a path, beside
nginx's and Caddy's (Tests/AuthGatewayTests/Integration/Targets).

  location_server.py COUNT
      Listens on COUNT ports of 127.0.0.1 (chosen by the system), prints them as one JSON line
      ({"ports": [...]}), then answers every GET on listener i with one line:
          <location> <i> <path as translate_path resolved it>
      where <location> is "public" (under /public/), "admin" (under /admin/) or "open".
      Stops on SIGTERM.
"""
import http.server
import json
import signal
import sys
import threading

ROOT = "/srv/location-root"


def handler_for(index):
    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=ROOT, **kwargs)

        def do_GET(self):
            # translate_path touches no file: it only resolves the spelling to a path under ROOT.
            resolved = self.translate_path(self.path)[len(ROOT):] or "/"
            if resolved.startswith("/public/"):
                location = "public"
            elif resolved.startswith("/admin/"):
                location = "admin"
            else:
                location = "open"
            body = ("%s %d %s\n" % (location, index, resolved)).encode("utf-8", "surrogateescape")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def main():
    count = int(sys.argv[1])
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_for(i)) for i in range(count)]
    for server in servers:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"ports": [server.server_address[1] for server in servers]}), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
