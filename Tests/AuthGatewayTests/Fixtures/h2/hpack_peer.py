#!/usr/bin/env python3
"""HTTP/2 peers that report how each header field was HPACK-encoded (Python `h2` + `hpack`,
an implementation independent of the gateway's NIOHTTP2).

  hpack_peer.py server
      serves h2c (prior knowledge) on 127.0.0.1:<free port>, prints "READY <port>", and answers
      every request 200 with a JSON body {"fields": [[name, value, neverIndexed], ...]} listing
      the request fields as received; its response carries `x-backend-secret` never-indexed,
      `x-backend-plain` indexable and a `set-cookie` — and, when the request carries
      `x-respond-with: NAME=VALUE`, that field too, indexable.
  hpack_peer.py client HOST:PORT PATH [--header NAME=VALUE]... [--secret NAME=VALUE]...
      sends one h2c GET (`--secret` fields never-indexed, `--header` fields indexable), prints
      one JSON line {"status", "fields": [[name, value, neverIndexed], ...], "body"}.

Both stop by themselves: the client after one exchange or 10 s, the server on SIGTERM or after
120 s.
"""
import json
import os
import signal
import socket
import sys
import threading

import h2.config
import h2.connection
import h2.events
from hpack import HeaderTuple, NeverIndexedHeaderTuple


def describe(headers):
    return [[field[0], field[1], isinstance(field, NeverIndexedHeaderTuple)] for field in headers]


def serve_connection(sock):
    config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    fields = {}
    sock.settimeout(30)
    try:
        while True:
            data = sock.recv(65535)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    fields[event.stream_id] = describe(event.headers)
                    if event.stream_ended:
                        respond(conn, event.stream_id, fields.pop(event.stream_id))
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if event.stream_ended and event.stream_id in fields:
                        respond(conn, event.stream_id, fields.pop(event.stream_id))
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id in fields:
                    respond(conn, event.stream_id, fields.pop(event.stream_id))
            sock.sendall(conn.data_to_send())
    except (OSError, h2.exceptions.ProtocolError):
        return
    finally:
        sock.close()


def respond(conn, stream_id, fields):
    body = json.dumps({"fields": fields}).encode()
    extra = []
    for name, value, _ in fields:
        if name == "x-respond-with":
            extra_name, _, extra_value = value.partition("=")
            extra.append(HeaderTuple(extra_name, extra_value))
    conn.send_headers(stream_id, [
        HeaderTuple(":status", "200"),
        HeaderTuple("content-type", "application/json"),
        HeaderTuple("content-length", str(len(body))),
        NeverIndexedHeaderTuple("x-backend-secret", "backend-s3cret"),
        HeaderTuple("x-backend-plain", "plain"),
        HeaderTuple("set-cookie", "backend_session=abc; HttpOnly"),
    ] + extra)
    conn.send_data(stream_id, body, end_stream=True)


def server():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    threading.Timer(120, lambda: os._exit(0)).start()
    print("READY %d" % listener.getsockname()[1], flush=True)
    listener.settimeout(120)
    while True:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=serve_connection, args=(sock,), daemon=True).start()


def client(target, path, plain, secret):
    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    headers = [
        HeaderTuple(":method", "GET"), HeaderTuple(":scheme", "http"),
        HeaderTuple(":authority", target), HeaderTuple(":path", path),
    ]
    headers += [HeaderTuple(name, value) for name, value in plain]
    headers += [NeverIndexedHeaderTuple(name, value) for name, value in secret]
    conn.send_headers(1, headers, end_stream=True)
    sock.sendall(conn.data_to_send())
    result = {"status": 0, "fields": [], "body": ""}
    body = b""
    done = False
    while not done:
        data = sock.recv(65535)
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                result["fields"] = describe(event.headers)
                result["status"] = int(dict(event.headers)[":status"])
            elif isinstance(event, h2.events.DataReceived):
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = True
        sock.sendall(conn.data_to_send())
    sock.close()
    result["body"] = body.decode("utf-8", "replace")
    print(json.dumps(result), flush=True)


def pairs(arguments, flag):
    found = []
    for index, argument in enumerate(arguments):
        if argument == flag and index + 1 < len(arguments):
            name, _, value = arguments[index + 1].partition("=")
            found.append((name, value))
    return found


if __name__ == "__main__":
    if sys.argv[1:2] == ["server"]:
        server()
    elif sys.argv[1:2] == ["client"] and len(sys.argv) >= 4:
        client(sys.argv[2], sys.argv[3], pairs(sys.argv, "--header"), pairs(sys.argv, "--secret"))
    else:
        sys.exit(__doc__)
