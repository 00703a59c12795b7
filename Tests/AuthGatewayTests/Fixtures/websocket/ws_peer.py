#!/usr/bin/env python3
"""A real WebSocket peer (Python `websockets`) on both sides of the gateway's tunnels.

  ws_peer.py server      a WebSocket backend on 127.0.0.1:<free port>: prints "READY <port>",
                         then one JSON line per event until SIGTERM:
                           {"event": "open", "id": n, "path": ..., "subprotocol": ...,
                            "offered": <Sec-WebSocket-Protocol as received or null>,
                            "authorization": <as received or null>}
                           {"event": "closed", "id": n, "path": ..., "code": <close code the
                            backend received, or null>, "reason": ..., "at": <Unix time>}
                         Echoes every message. Selects the subprotocol "chat" when offered.
  ws_peer.py client URL [--token T] [--protocol-token PREFIX T] [--protocols a,b]
                        [--cookie C] [--timeout S]
                         connects (Authorization: Bearer T, or T base64url in a
                         Sec-WebSocket-Protocol entry after PREFIX), sends a message every 0.1 s
                         and prints one JSON object once the connection ends (or at --timeout):
                         {"opened": bool, "status": <HTTP status when refused>, "subprotocol",
                          "echoes": n, "code": <close code received>, "reason", "at": <Unix
                          time the close arrived>, "opened_at"}
  ws_peer.py many URL N TOKENS_FILE [--timeout S]
                         opens N tunnels (tunnel i with line i % lines of TOKENS_FILE as its
                         bearer token), prints "OPEN <n>" once all are open, then on each line
                         "CLOSED <i> <code>" as tunnels close, and "DONE" at --timeout; exits on
                         stdin's end.
"""
import asyncio
import base64
import json
import sys
import time

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed, InvalidStatus


def emit(document):
    print(json.dumps(document), flush=True)


async def run_server():
    counter = {"next": 0}

    async def handler(connection):
        counter["next"] += 1
        ident = counter["next"]
        headers = connection.request.headers
        path = connection.request.path
        emit({"event": "open", "id": ident, "path": path, "subprotocol": connection.subprotocol,
              "offered": headers.get("Sec-WebSocket-Protocol"), "authorization": headers.get("Authorization")})
        try:
            async for message in connection:
                await connection.send(message)
        except ConnectionClosed:
            pass
        received = connection.protocol.close_rcvd
        emit({"event": "closed", "id": ident, "path": path, "code": received.code if received else None,
              "reason": received.reason if received else None, "at": time.time()})

    def select(connection, offered):
        return "chat" if "chat" in offered else None

    async with serve(handler, "127.0.0.1", 0, select_subprotocol=select, ping_interval=None,
                     max_size=None, backlog=4096) as server:
        port = server.sockets[0].getsockname()[1]
        print("READY %d" % port, flush=True)
        await asyncio.Future()


def client_options(arguments):
    options = {"--timeout": "30"}
    index = 0
    while index < len(arguments):
        if arguments[index] == "--protocol-token":
            options["--protocol-token"] = (arguments[index + 1], arguments[index + 2])
            index += 3
        else:
            options[arguments[index]] = arguments[index + 1]
            index += 2
    return options


async def run_client(url, options):
    headers = {}
    if "--token" in options:
        headers["Authorization"] = "Bearer " + options["--token"]
    if "--cookie" in options:
        headers["Cookie"] = options["--cookie"]
    protocols = [p for p in options.get("--protocols", "").split(",") if p]
    if "--protocol-token" in options:
        prefix, token = options["--protocol-token"]
        encoded = base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")
        protocols = [prefix + encoded] + protocols
    result = {"opened": False, "echoes": 0}
    deadline = time.monotonic() + float(options["--timeout"])
    try:
        async with connect(url, additional_headers=headers, subprotocols=protocols or None,
                           ping_interval=None, open_timeout=20, max_size=None) as connection:
            result["opened"] = True
            result["opened_at"] = time.time()
            result["subprotocol"] = connection.subprotocol

            async def sender():
                index = 0
                while True:
                    await connection.send("m%d" % index)
                    index += 1
                    await asyncio.sleep(0.1)

            sending = asyncio.ensure_future(sender())
            try:
                while time.monotonic() < deadline:
                    try:
                        await asyncio.wait_for(connection.recv(), timeout=max(0.01, deadline - time.monotonic()))
                        result["echoes"] += 1
                    except asyncio.TimeoutError:
                        break
            except ConnectionClosed:
                pass
            finally:
                sending.cancel()
            received = connection.protocol.close_rcvd
            if received is not None:
                result["code"] = received.code
                result["reason"] = received.reason
                result["at"] = time.time()
    except InvalidStatus as error:
        result["status"] = error.response.status_code
    except ConnectionClosed:
        pass
    emit(result)


async def run_many(url, count, tokens_file, timeout):
    tokens = [line.strip() for line in open(tokens_file) if line.strip()]
    connections = []
    for batch in range(0, count, 200):
        opened = await asyncio.gather(*[
            connect(url, additional_headers={"Authorization": "Bearer " + tokens[index % len(tokens)]},
                    ping_interval=None, open_timeout=60, close_timeout=1)
            for index in range(batch, min(count, batch + 200))])
        connections.extend(opened)
    print("OPEN %d" % len(connections), flush=True)

    async def watch(index, connection):
        try:
            await connection.wait_closed()
        except Exception:
            pass
        received = connection.protocol.close_rcvd
        print("CLOSED %d %s" % (index, received.code if received else "none"), flush=True)

    watchers = [asyncio.ensure_future(watch(index, connection)) for index, connection in enumerate(connections)]
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    await asyncio.wait([asyncio.ensure_future(asyncio.sleep(timeout)), stdin_closed],
                       return_when=asyncio.FIRST_COMPLETED)
    print("DONE", flush=True)
    for watcher in watchers:
        watcher.cancel()


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "server":
        asyncio.run(run_server())
    elif len(sys.argv) >= 3 and sys.argv[1] == "client":
        asyncio.run(run_client(sys.argv[2], client_options(sys.argv[3:])))
    elif len(sys.argv) >= 5 and sys.argv[1] == "many":
        options = client_options(sys.argv[5:])
        asyncio.run(run_many(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(options["--timeout"])))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
