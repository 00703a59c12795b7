#!/usr/bin/env python3
"""Hostile calls of Envoy's ext_authz `Check` by a real gRPC client (Python grpcio, messages
from PyPI's xds-protos), on one h2c channel to 127.0.0.1:PORT. Prints one JSON line, case name
-> {"grpc": code name, "details": str} or, for an answered Check, {"grpc": "OK", "status":
CheckResponse.status.code, "which": the http_response case, "deniedStatus": int}.

  check_attacks.py attacks PORT TOKEN
      oversized  - a CheckRequest over the gateway's 1 MiB limit (a 2 MiB header value)
      truncated  - a valid CheckRequest's bytes cut in the middle of a field
      garbage    - 4 KiB of seeded random bytes
      wiretype   - a field tag with an invalid wire type (7)
      empty      - a zero-length message (a CheckRequest with nothing in it)
      after      - a valid Check with TOKEN: the connection still serves
  check_attacks.py untrusted PORT TOKEN
      allowed    - a valid Check with TOKEN, from a caller the gateway does not trust

Exits 2 with the reason on stderr when grpcio or xds-protos is missing.
"""
import json
import random
import sys

try:
    import grpc
    from envoy.service.auth.v3 import external_auth_pb2, external_auth_pb2_grpc
except ImportError as error:  # pragma: no cover - reported to the Swift test
    sys.stderr.write("Python grpcio / xds-protos is not installed: %s\n" % error)
    sys.exit(2)

METHOD = "/envoy.service.auth.v3.Authorization/Check"


def request(path, token=None, extra=None):
    check = external_auth_pb2.CheckRequest()
    check.attributes.source.address.socket_address.address = "203.0.113.7"
    http = check.attributes.request.http
    http.method = "GET"
    http.path = path
    http.host = "shop.example.com"
    http.scheme = "https"
    if token:
        http.headers["authorization"] = "Bearer " + token
    for name, value in (extra or {}).items():
        http.headers[name] = value
    return check


def checked(stub, check):
    try:
        response = stub.Check(check, timeout=30)
    except grpc.RpcError as error:
        return {"grpc": error.code().name, "details": error.details()}
    which = response.WhichOneof("http_response")
    result = {"grpc": "OK", "status": response.status.code, "which": which}
    if which == "denied_response":
        result["deniedStatus"] = response.denied_response.status.code
    return result


def raw_call(raw, payload):
    try:
        raw(payload, timeout=30)
        return {"grpc": "OK"}
    except grpc.RpcError as error:
        return {"grpc": error.code().name, "details": error.details()}


def main():
    mode, port, token = sys.argv[1], sys.argv[2], sys.argv[3]
    options = [("grpc.max_send_message_length", 8 * 1024 * 1024)]
    with grpc.insecure_channel("127.0.0.1:%s" % port, options=options) as channel:
        stub = external_auth_pb2_grpc.AuthorizationStub(channel)
        raw = channel.unary_unary(METHOD, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        if mode == "untrusted":
            print(json.dumps({"allowed": checked(stub, request("/api/orders", token))}))
            return
        results = {}
        results["oversized"] = checked(stub, request("/api/orders", token, {"x-big": "a" * (2 * 1024 * 1024)}))
        valid = request("/api/orders", token).SerializeToString()
        results["truncated"] = raw_call(raw, valid[: len(valid) // 2])
        results["garbage"] = raw_call(raw, random.Random(7).randbytes(4096))
        results["wiretype"] = raw_call(raw, b"\x0f\x01\x02\x03")
        results["empty"] = raw_call(raw, b"")
        results["after"] = checked(stub, request("/api/orders", token))
        print(json.dumps(results))


if __name__ == "__main__":
    main()
