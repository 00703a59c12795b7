#!/usr/bin/env python3
"""A real gRPC peer (Python grpcio, the C core) for the gateway's gRPC tests.

No protobuf: messages are raw bytes (grpcio's generic handlers with identity serializers), so
only `grpcio` is needed (`pip install grpcio`).

  grpc_peer.py server            serves test.Echo on 127.0.0.1:<free port> (h2c), prints
                                 "READY <port>" and runs until SIGTERM
  grpc_peer.py client TARGET CASE [--token T] [--refresh-token R] [--timeout S]
                     [--method /pkg.Service/Method] [--metadata '[["name", "value"], ...]']
                                 runs one scenario against TARGET (host:port, h2c) and prints one
                                 JSON object: code, details, initial/trailing metadata, results;
                                 --method: the path "unary" calls instead of /test.Echo/Unary;
                                 --metadata: more metadata on every call

Methods of test.Echo:
  Unary          echoes the request; trailing metadata "seen-<name>" for x-user-subject,
                 authorization and x-refresh-token as received (so the test sees what the
                 gateway forwarded)
  ServerStream   request b"<n>" -> n messages b"part-<i>"
  ClientStream   concatenates every request message
  Bidi           answers each message with b"echo:" + message
  Slow           sleeps 30 s, then echoes (the tests expect a deadline to cut it short)
  Forever        a server stream: b"tick-<i>" every 0.1 s until the call ends

  grpc_peer.py client TARGET expiry --token SHORT --other-token LONG
                                 on one channel (one HTTP/2 connection): a Forever stream and a
                                 Bidi call with SHORT, a Forever stream with LONG; reports each
                                 call's code and when it ended (Unix time), and how many ticks
                                 the LONG stream received after both SHORT calls had ended
"""
import json
import sys
import threading
import time
from concurrent import futures

import grpc

SERVICE = "test.Echo"
OPTIONS = [("grpc.max_receive_message_length", 16 << 20), ("grpc.max_send_message_length", 16 << 20)]


def seen_metadata(context):
    seen = []
    for key, value in context.invocation_metadata():
        if key in ("x-user-subject", "authorization", "x-refresh-token", "x-request-id"):
            seen.append(("seen-" + key, value))
    return seen


def unary(request, context):
    context.set_trailing_metadata(seen_metadata(context))
    return request


def server_stream(request, context):
    for index in range(int(request.decode() or "0")):
        yield b"part-%d" % index


def client_stream(request_iterator, context):
    return b"".join(request_iterator)


def bidi(request_iterator, context):
    for message in request_iterator:
        yield b"echo:" + message


def slow(request, context):
    time.sleep(30)
    return request


def forever(request, context):
    index = 0
    subject = dict(context.invocation_metadata()).get("x-user-subject", "")
    while context.is_active():
        yield b"tick-%d" % index
        index += 1
        time.sleep(0.1)
    # An endless call ends only when its caller (or the gateway, for it) cancels it: say whose
    # and when, for the tests that check the backend's side of an ending.
    print(json.dumps({"ended": "Forever", "subject": subject, "at": time.time()}), flush=True)


def serve():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=OPTIONS)
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
        "Slow": grpc.unary_unary_rpc_method_handler(slow),
        "Forever": grpc.unary_stream_rpc_method_handler(forever),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("READY %d" % port, flush=True)
    # SIGTERM's default action ends the process.
    server.wait_for_termination()


def expiry_case(channel, token, other_token, timeout):
    """Two calls with a short-lived token and one with another, on one connection."""
    short = [("authorization", "Bearer " + token)]
    long = [("authorization", "Bearer " + other_token)]
    stop = threading.Event()
    ended = {}

    def drain(name, calls):
        count = 0
        try:
            for _ in calls:
                count += 1
            ended[name] = {"code": "OK", "count": count, "at": time.time()}
        except grpc.RpcError as error:
            ended[name] = {"code": error.code().name, "details": error.details(), "count": count, "at": time.time()}

    def messages():
        index = 0
        while not stop.is_set():
            yield b"%d" % index
            index += 1
            time.sleep(0.1)

    other = channel.unary_stream("/%s/Forever" % SERVICE)(b"", metadata=long, timeout=timeout)
    stream = channel.unary_stream("/%s/Forever" % SERVICE)(b"", metadata=short, timeout=timeout)
    bidi = channel.stream_stream("/%s/Bidi" % SERVICE)(messages(), metadata=short, timeout=timeout)
    threads = [threading.Thread(target=drain, args=("stream", stream)), threading.Thread(target=drain, args=("bidi", bidi))]
    for thread in threads:
        thread.start()
    result = {"other_after": 0}
    try:
        for _ in other:
            if len(ended) == 2:
                result["other_after"] += 1
                if result["other_after"] >= 5:
                    break
        result["other_code"] = "OK"
    except grpc.RpcError as error:
        result["other_code"] = error.code().name
    other.cancel()
    stop.set()
    for thread in threads:
        thread.join(timeout)
    result.update(ended)
    return result


def run_case(target, case, token, refresh_token, timeout, method=None, extra_metadata=(), other_token=None):
    channel = grpc.insecure_channel(target, options=OPTIONS)
    metadata = []
    if token:
        metadata.append(("authorization", "Bearer " + token))
    if refresh_token:
        metadata.append(("x-refresh-token", refresh_token))
    metadata.extend((name, value) for name, value in extra_metadata)
    result = {"case": case}

    def stub(kind, method):
        return getattr(channel, kind)("/%s/%s" % (SERVICE, method))

    try:
        if case == "warm_then_unary":
            # One plain call first (the channel has the server's SETTINGS), then the call
            # with --metadata.
            stub("unary_unary", "Unary")(b"warm", metadata=metadata[: len(metadata) - len(extra_metadata)], timeout=timeout)
            response, call = stub("unary_unary", "Unary").with_call(b"hello", metadata=metadata, timeout=timeout)
            result["response"] = response.decode()
        elif case in ("unary", "refused"):
            unary_call = channel.unary_unary(method) if method else stub("unary_unary", "Unary")
            response, call = unary_call.with_call(b"hello", metadata=metadata, timeout=timeout)
            result["response"] = response.decode()
            result["initial"] = dict(call.initial_metadata())
            result["trailing"] = dict(call.trailing_metadata())
        elif case == "server_stream":
            calls = stub("unary_stream", "ServerStream")(b"5", metadata=metadata, timeout=timeout)
            result["responses"] = [part.decode() for part in calls]
        elif case == "client_stream":
            response = stub("stream_unary", "ClientStream")(iter([b"a", b"bb", b"ccc", b"dddd", b"eeeee"]), metadata=metadata, timeout=timeout)
            result["response"] = response.decode()
        elif case == "bidi":
            calls = stub("stream_stream", "Bidi")(iter([b"1", b"2", b"3", b"4", b"5"]), metadata=metadata, timeout=timeout)
            result["responses"] = [part.decode() for part in calls]
        elif case == "large":
            payload = bytes((index * 7) % 251 for index in range(3 << 20))
            response = stub("unary_unary", "Unary")(payload, metadata=metadata, timeout=timeout)
            result["sizes"] = [len(payload), len(response)]
            result["equal"] = response == payload
        elif case == "concurrent":
            unary_call = stub("unary_unary", "Unary")
            pending = [unary_call.future(b"call-%d" % index, metadata=metadata, timeout=timeout) for index in range(100)]
            answers = [future.result().decode() for future in pending]
            result["ok"] = sum(1 for index, answer in enumerate(answers) if answer == "call-%d" % index)
        elif case == "expiry":
            result.update(expiry_case(channel, token, other_token, timeout))
        elif case == "slow":
            response = stub("unary_unary", "Slow")(b"late", metadata=metadata, timeout=timeout)
            result["response"] = response.decode()
        else:
            raise SystemExit("unknown case " + case)
        result["code"] = "OK"
    except grpc.RpcError as error:
        result["code"] = error.code().name
        result["details"] = error.details()
        result["initial"] = dict(error.initial_metadata() or [])
        result["trailing"] = dict(error.trailing_metadata() or [])
    channel.close()
    print(json.dumps(result))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "server":
        serve()
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "client":
        arguments = sys.argv[4:]
        options = {}
        while arguments:
            options[arguments[0]] = arguments[1]
            arguments = arguments[2:]
        run_case(
            sys.argv[2], sys.argv[3], options.get("--token"), options.get("--refresh-token"),
            float(options.get("--timeout", "10")), options.get("--method"),
            json.loads(options.get("--metadata", "[]")), options.get("--other-token"))
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
