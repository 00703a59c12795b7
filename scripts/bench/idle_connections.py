#!/usr/bin/env python3
"""Opens N keep-alive connections to 127.0.0.1:PORT, makes one authorized request on each,
keeps them all open and idle, prints 'ready N', and holds them until stdin closes (or 120 s).
Usage: idle_connections.py PORT N TOKENFILE"""
import asyncio, sys

async def one(port, request):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(head[:40])
    return writer

async def main():
    port, count, token = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3]).read().strip()
    request = f"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    writers = []
    for start in range(0, count, 500):
        writers += await asyncio.gather(*(one(port, request) for _ in range(start, min(count, start + 500))))
    print(f"ready {len(writers)}", flush=True)
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.read), timeout=120)
    except asyncio.TimeoutError:
        pass
    for w in writers:
        w.close()

asyncio.run(main())
