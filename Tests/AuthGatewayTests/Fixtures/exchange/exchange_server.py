#!/usr/bin/env python3
"""A real RFC 8693 token-exchange server for the gateway's tests: idpyoidc's OAuth 2.0
authorization server (its Token endpoint with the token-exchange grant), on 127.0.0.1.

    exchange_server.py [--blackhole]

Prints one JSON line when listening: {"port": N}. Then serves:
    POST /token            idpyoidc's token endpoint (client "gateway", secret "gateway-secret",
                           basic or form authentication); counts every call
    GET  /mint?lifetime=S  a fresh access token idpyoidc issued to user "alice" for client
                           "gateway" (the subject token to exchange), living S seconds
    GET  /count            {"calls": N}: calls to /token so far
    GET  /jwks.json        the public keys idpyoidc signs its tokens with (a gateway in front
                           verifies the minted subject tokens with them; issuer
                           http://127.0.0.1:N)
Audience "refused-api" is refused by the exchange policy with invalid_grant (idpyoidc's
TokenErrorResponse), so a test can see a refusal.

--blackhole accepts connections and never answers (a token endpoint that hangs).
Ends on SIGTERM. Never prints a token except in /mint's answer.
"""
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

CLIENT_ID = "gateway"
CLIENT_SECRET = "gateway-secret"
USER = "alice"


def blackhole():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(json.dumps({"port": listener.getsockname()[1]}), flush=True)
    held = []
    while True:
        connection, _ = listener.accept()
        held.append(connection)  # never read, never answered


def policy(request, context, subject_token, **kwargs):
    """The exchange policy: idpyoidc's default, except that one audience is refused."""
    from idpyoidc.message.oidc import TokenErrorResponse
    from idpyoidc.server.oauth2.token_helper import validate_token_exchange_policy

    if "refused-api" in (request.get("audience") or []):
        return TokenErrorResponse(error="invalid_grant", error_description="audience not allowed")
    return validate_token_exchange_policy(request, context, subject_token, **kwargs)


def make_server(issuer, folder):
    from idpyoidc.server import Server
    from idpyoidc.server.configure import ASConfiguration

    conf = {
        "issuer": issuer,
        "httpc_params": {"verify": False},
        "keys": {
            "private_path": os.path.join(folder, "jwks.json"),
            "key_defs": [{"type": "RSA", "use": ["sig"]}, {"type": "EC", "crv": "P-256", "use": ["sig"]}],
            "uri_path": "jwks.json",
            "read_only": False,
        },
        "token_handler_args": {
            "jwks_def": {
                "private_path": os.path.join(folder, "token_jwks.json"),
                "read_only": False,
                "key_defs": [{"type": "oct", "bytes": 24, "use": ["enc"], "kid": "code"}],
            },
            "code": {"kwargs": {"lifetime": 600}},
            "token": {
                "class": "idpyoidc.server.token.jwt_token.JWTToken",
                "kwargs": {"lifetime": 3600, "aud": ["https://api.example.com"]},
            },
            "refresh": {"kwargs": {"lifetime": 86400}},
        },
        "endpoint": {
            "token": {
                "path": "token",
                "class": "idpyoidc.server.oauth2.token.Token",
                "kwargs": {
                    # The form body of RFC 6749 §4.1.3 (idpyoidc's default here is JSON).
                    "request_format": "urlencoded",
                    "client_authn_method": ["client_secret_basic", "client_secret_post"],
                    "grant_types_helpers": {
                        "urn:ietf:params:oauth:grant-type:token-exchange": {
                            "class": "idpyoidc.server.oauth2.token_helper.token_exchange.TokenExchangeHelper",
                            "kwargs": {
                                "subject_token_types_supported": [
                                    "urn:ietf:params:oauth:token-type:access_token",
                                ],
                                "requested_token_types_supported": [
                                    "urn:ietf:params:oauth:token-type:access_token",
                                ],
                                "policy": {"": {"function": policy}},
                            },
                        },
                    },
                },
            },
        },
        "authentication": {
            "anon": {
                "acr": "urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified",
                "class": "idpyoidc.server.user_authn.user.NoAuthn",
                "kwargs": {"user": USER},
            }
        },
        "authz": {
            "class": "idpyoidc.server.authz.AuthzHandling",
            "kwargs": {
                "grant_config": {
                    "usage_rules": {
                        "authorization_code": {"supports_minting": ["access_token"], "max_usage": 1},
                        "access_token": {"supports_minting": ["access_token"], "expires_in": 3600},
                    },
                    "expires_in": 43200,
                }
            },
        },
        "session_params": {"encrypter": {"kwargs": {"keys": {"key_defs": [
            {"type": "OCT", "use": ["enc"], "kid": "password"},
            {"type": "OCT", "use": ["enc"], "kid": "salt"},
        ]}, "iterations": 1}}},
        "userinfo": {"class": "idpyoidc.server.user_info.UserInfo", "kwargs": {"db": {USER: {"sub": USER}}}},
        "scopes_to_claims": {"openid": ["sub"], "read": [], "orders.read": []},
    }
    server = Server(ASConfiguration(conf=conf, base_path=folder, domain="127.0.0.1", port=0), cwd=folder)
    context = server.context
    context.cdb[CLIENT_ID] = {
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uris": [("https://gateway.example.com/cb", {})],
        "token_endpoint_auth_method": "client_secret_basic",
        "response_types_supported": ["code"],
        "grant_types_supported": [
            "authorization_code",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ],
        "allowed_scopes": ["openid", "read", "orders.read"],
        "client_salt": "salted",
    }
    return server


def mint(server, lifetime):
    """An access token idpyoidc issues to USER for CLIENT_ID, as after a sign-in."""
    from idpyoidc.message.oauth2 import AuthorizationRequest

    context = server.context
    manager = context.session_manager
    request = AuthorizationRequest(
        client_id=CLIENT_ID, redirect_uri="https://gateway.example.com/cb", response_type="code",
        scope=["openid", "read", "orders.read"], state="s")
    from idpyoidc.server.authn_event import create_authn_event

    event = create_authn_event(USER)
    session_id = manager.create_session(
        authn_event=event, auth_req=request, user_id=USER, client_id=CLIENT_ID)
    grant = manager[session_id]
    grant.scope = ["openid", "read", "orders.read"]
    # An access token that may be exchanged for another (RFC 8693: minting based on it).
    rules = {"supports_minting": ["access_token"], "expires_in": lifetime}
    code = grant.mint_token(session_id, context=context, token_class="authorization_code",
                            token_handler=manager.token_handler["authorization_code"], usage_rules=dict(rules))
    token = grant.mint_token(session_id, context=context, token_class="access_token",
                             token_handler=manager.token_handler["access_token"], based_on=code,
                             usage_rules=dict(rules), expires_in=lifetime)
    token.expires_at = int(time.time()) + lifetime
    return token.value, token.expires_at


def serve():
    folder = tempfile.mkdtemp(prefix="exchange-server-")
    listener = ThreadingHTTPServer(("127.0.0.1", 0), None)
    port = listener.server_address[1]
    server = make_server(f"http://127.0.0.1:{port}", folder)
    # The server holds its keys once made: the key files go now, not at a SIGTERM a loaded
    # machine may answer too late (the test then kills the process).
    shutil.rmtree(folder, ignore_errors=True)
    lock = threading.Lock()
    state = {"calls": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # no access log: it would name nothing secret, but keep quiet
            pass

        def answer(self, status, document):
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            url = urlparse(self.path)
            if url.path == "/count":
                with lock:
                    return self.answer(200, {"calls": state["calls"]})
            if url.path == "/jwks.json":
                with lock:
                    return self.answer(200, server.context.keyjar.export_jwks())
            if url.path == "/mint":
                lifetime = int(parse_qs(url.query).get("lifetime", ["3600"])[0])
                with lock:
                    value, expires_at = mint(server, lifetime)
                return self.answer(200, {"access_token": value, "expires_at": expires_at})
            self.answer(404, {"error": "not_found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode()
            if urlparse(self.path).path != "/token":
                return self.answer(404, {"error": "not_found"})
            with lock:
                state["calls"] += 1
                endpoint = server.get_endpoint("token")
                http_info = {
                    "headers": {"authorization": self.headers.get("Authorization")},
                    "url": f"http://127.0.0.1:{port}/token",
                    "method": "POST",
                }
                try:
                    request = endpoint.parse_request(body, http_info=http_info)
                except Exception:  # idpyoidc raises on failed client authentication
                    return self.answer(401, {"error": "invalid_client"})
                if "error" in request:
                    response = request
                else:
                    response = endpoint.process_request(request)
                    if "error" not in response:
                        response = response.get("response_args", response)
            document = response.to_dict() if hasattr(response, "to_dict") else dict(response)
            self.answer(400 if "error" in document else 200, document)

    listener.RequestHandlerClass = Handler
    print(json.dumps({"port": port}), flush=True)
    listener.serve_forever()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if "--blackhole" in sys.argv:
        blackhole()
    else:
        serve()
