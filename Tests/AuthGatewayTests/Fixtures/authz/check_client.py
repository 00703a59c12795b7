#!/usr/bin/env python3
"""A real gRPC client of Envoy's ext_authz `Check` (Python grpcio, messages from PyPI's
xds-protos): what Envoy, Istio CUSTOM or Envoy Gateway send to the gateway.

  check_client.py PORT TOKEN
      Makes these calls on one h2c channel to 127.0.0.1:PORT and prints one JSON line with each
      outcome ({"grpc": code name, "status": CheckResponse.status.code, "which": the
      http_response case, "headers": {...}, "remove": [...], "deniedStatus": int, "body": str}):
        allowed   - GET /api/orders with `authorization: Bearer TOKEN`, a forged x-user-subject
        missing   - GET /api/orders without a token
        forbidden - GET /admin/x with the token
        malformed - bytes that are not a CheckRequest (a raw unary call)
        after     - `allowed` again: the connection still serves

  check_client.py PORT TOKEN ambiguous
      The same outcome per call, with the token, for originals whose target is ambiguous
      (docs/forwarding.md, "Request targets"): each must be a denial (400, status.code 3):
        escapedSlash    - path /public/..%2Fadmin/x
        dotParameter    - path /a/..;/b
        overlong        - path /public/%C0%AE%C0%AE/admin/x
        doubleEncoded   - path /public/%252e%252e/admin/x
        aboveRoot       - path /../admin/x
        nonASCII        - path /public/caf\u00e9 (raw UTF-8 in the proto string)
        userinfoHost    - host user@admin.example.com
        emptyLabelHost  - host admin.example.com..
        authorityHost   - no host field; :authority user@admin.example.com
        fragment        - path /public/x#/../../admin
      and the controls:
        control         - path /public/ok (allowed)
        canonical       - path /public/%2e%2e/admin/x, decided on /admin/x (the admin route's
                          403 for a token without its role)

Exits 2 with the reason on stderr when grpcio or xds-protos is missing.
"""
import json
import sys

try:
    import grpc
    from envoy.service.auth.v3 import external_auth_pb2, external_auth_pb2_grpc
except ImportError as error:  # pragma: no cover - reported to the Swift test
    sys.stderr.write("Python grpcio / xds-protos is not installed: %s\n" % error)
    sys.exit(2)


def request(path, token=None, host="shop.example.com", authority=None):
    check = external_auth_pb2.CheckRequest()
    check.attributes.source.address.socket_address.address = "203.0.113.7"
    http = check.attributes.request.http
    http.method = "GET"
    http.path = path
    http.host = host
    http.scheme = "https"
    http.headers[":authority"] = authority if authority is not None else host
    http.headers[":path"] = path
    http.headers["x-user-subject"] = "forged"
    if token:
        http.headers["authorization"] = "Bearer " + token
    return check


def outcome(stub, check):
    try:
        response = stub.Check(check, timeout=20)
    except grpc.RpcError as error:
        return {"grpc": error.code().name, "details": error.details()}
    which = response.WhichOneof("http_response")
    result = {"grpc": "OK", "status": response.status.code, "which": which}
    if which == "ok_response":
        result["headers"] = {h.header.key: h.header.value for h in response.ok_response.headers}
        result["remove"] = list(response.ok_response.headers_to_remove)
    elif which == "denied_response":
        result["deniedStatus"] = response.denied_response.status.code
        result["headers"] = {h.header.key: h.header.value for h in response.denied_response.headers}
        result["body"] = response.denied_response.body
    return result


def ambiguous(stub, token):
    return {
        "escapedSlash": outcome(stub, request("/public/..%2Fadmin/x", token)),
        "dotParameter": outcome(stub, request("/a/..;/b", token)),
        "overlong": outcome(stub, request("/public/%C0%AE%C0%AE/admin/x", token)),
        "doubleEncoded": outcome(stub, request("/public/%252e%252e/admin/x", token)),
        "aboveRoot": outcome(stub, request("/../admin/x", token)),
        "nonASCII": outcome(stub, request("/public/caf\u00e9", token)),
        "userinfoHost": outcome(stub, request("/public/x", token, host="user@admin.example.com")),
        "emptyLabelHost": outcome(stub, request("/public/x", token, host="admin.example.com..")),
        "authorityHost": outcome(stub, request("/public/x", token, host="", authority="user@admin.example.com")),
        "control": outcome(stub, request("/public/ok", token)),
        "fragment": outcome(stub, request("/public/x#/../../admin", token)),
        "canonical": outcome(stub, request("/public/%2e%2e/admin/x", token)),
    }


def main():
    port, token = sys.argv[1], sys.argv[2]
    with grpc.insecure_channel("127.0.0.1:%s" % port) as channel:
        stub = external_auth_pb2_grpc.AuthorizationStub(channel)
        if sys.argv[3:] == ["ambiguous"]:
            print(json.dumps(ambiguous(stub, token)))
            return
        results = {
            "allowed": outcome(stub, request("/api/orders", token)),
            "missing": outcome(stub, request("/api/orders")),
            "forbidden": outcome(stub, request("/admin/x", token)),
        }
        raw = channel.unary_unary(
            "/envoy.service.auth.v3.Authorization/Check",
            request_serializer=lambda b: b, response_deserializer=lambda b: b)
        try:
            raw(b"\xff\xff\xff\xff not protobuf", timeout=20)
            results["malformed"] = {"grpc": "OK"}
        except grpc.RpcError as error:
            results["malformed"] = {"grpc": error.code().name, "details": error.details()}
        results["after"] = outcome(stub, request("/api/orders", token))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
