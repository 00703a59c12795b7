#!/usr/bin/env python3
"""Two server-sent-event streams on one h2c connection (Python `h2`), for the gateway's
long-lived HTTP/2 streams (docs/streams.md).

  sse_streams.py HOST:PORT PATH SHORT_TOKEN LONG_TOKEN [--timeout S]
      opens PATH twice on one connection (prior knowledge): stream 1 with `Authorization:
      Bearer SHORT_TOKEN`, stream 3 with LONG_TOKEN; reads both until stream 1 is reset and
      stream 3 has had 5 more DATA frames since (or --timeout, default 20 s), then prints one
      JSON line:
        {"short": {"status", "events": n, "reset": <error code or null>, "ended": bool,
                   "at": <Unix time of the reset or end>},
         "long": {"status", "events": n, "after": <DATA frames after stream 1's end>,
                  "reset": ...}}
"""
import json
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events


def main():
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    host, port = sys.argv[1].rsplit(":", 1)
    path, short_token, long_token = sys.argv[2], sys.argv[3], sys.argv[4]
    timeout = float(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[5] == "--timeout" else 20.0
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    streams = {}
    for name, token in (("short", short_token), ("long", long_token)):
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, [(":method", "GET"), (":scheme", "http"), (":authority", sys.argv[1]),
                                      (":path", path), ("authorization", "Bearer " + token)], end_stream=True)
        streams[stream_id] = {"name": name, "status": None, "events": 0, "reset": None, "ended": False}
    sock.sendall(conn.data_to_send())
    short_id, long_id = sorted(streams)
    short_done_at = None
    after = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = sock.recv(65535)
        except socket.timeout:
            break
        if not data:
            break
        for event in conn.receive_data(data):
            stream = streams.get(getattr(event, "stream_id", None))
            if stream is None:
                continue
            if isinstance(event, h2.events.ResponseReceived):
                stream["status"] = int(dict(event.headers).get(":status", "0"))
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                stream["events"] += 1
                if event.stream_id == long_id and short_done_at is not None:
                    after += 1
            elif isinstance(event, h2.events.StreamReset):
                stream["reset"] = int(event.error_code)
                stream["at"] = time.time()
                if event.stream_id == short_id:
                    short_done_at = time.monotonic()
            elif isinstance(event, h2.events.StreamEnded):
                stream["ended"] = True
                stream["at"] = time.time()
                if event.stream_id == short_id:
                    short_done_at = time.monotonic()
        sock.sendall(conn.data_to_send())
        if after >= 5 or streams[long_id]["reset"] is not None or streams[long_id]["ended"]:
            break
    streams[long_id]["after"] = after
    report = {streams[short_id]["name"]: streams[short_id], streams[long_id]["name"]: streams[long_id]}
    for stream in report.values():
        stream.pop("name")
    print(json.dumps(report), flush=True)
    sock.close()


if __name__ == "__main__":
    main()
