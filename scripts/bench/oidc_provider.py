#!/usr/bin/env python3
"""A minimal OpenID provider for the sessions curve of scripts/bench/scale.py: discovery, an ES256
JWKS, `/authorize` that signs every browser in at once (as a provider does for a browser that
already has its session: a 302 back with a code, no form) and `/token` (code → ID token with the
request's nonce + access token). Each code is a new user (`sub` user-<n>), so every session has
its own access token. Codes are kept until redeemed, nothing else is kept: signing in costs the
same at the millionth session as at the first (the demo provider's replay memory makes each code
exchange cost more as sessions pile up, a few hundred a second at first, tens after ~5 000).
No client authentication, PKCE or redirect URI checks: only for benchmarks on loopback.

    python3 oidc_provider.py PORT CLIENT_ID AUDIENCE    (issuer http://127.0.0.1:PORT)"""
import base64, json, secrets, sys, threading, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

PORT, CLIENT_ID, AUDIENCE = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ISSUER = f"http://127.0.0.1:{PORT}"
KEY = ec.generate_private_key(ec.SECP256R1())
HEADER = None
codes, lock, counter = {}, threading.Lock(), [0]


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(claims):
    signing_input = HEADER + "." + b64(json.dumps(claims, separators=(",", ":")).encode())
    r, s = decode_dss_signature(KEY.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


numbers = KEY.public_key().public_numbers()
JWK = {"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "scale-es256",
       "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}
HEADER = b64(json.dumps({"alg": "ES256", "typ": "JWT", "kid": JWK["kid"]}, separators=(",", ":")).encode())
DISCOVERY = {"issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/authorize", "token_endpoint": f"{ISSUER}/token",
             "jwks_uri": f"{ISSUER}/jwks", "response_types_supported": ["code"], "subject_types_supported": ["public"],
             "id_token_signing_alg_values_supported": ["ES256"], "code_challenge_methods_supported": ["S256"]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def json(self, document):
        self.answer(200, json.dumps(document).encode(), [("Content-Type", "application/json"), ("Cache-Control", "no-store")])

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/.well-known/openid-configuration":
            return self.json(DISCOVERY)
        if path == "/jwks":
            return self.json({"keys": [JWK]})
        if path == "/authorize":
            fields = dict(urllib.parse.parse_qsl(query))
            code = secrets.token_urlsafe(24)
            with lock:
                counter[0] += 1
                codes[code] = (fields.get("nonce"), f"user-{counter[0]}")
            back = {"code": code, "iss": ISSUER}
            if "state" in fields:
                back["state"] = fields["state"]
            return self.answer(302, headers=[("Location", fields["redirect_uri"] + "?" + urllib.parse.urlencode(back))])
        self.answer(404)

    def do_POST(self):
        fields = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()))
        with lock:
            grant = codes.pop(fields.get("code"), None)
        if self.path != "/token" or grant is None:
            return self.answer(400, b'{"error":"invalid_grant"}', [("Content-Type", "application/json")])
        nonce, subject = grant
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": subject, "iat": now, "exp": now + 86400}
        identity = dict(claims, aud=CLIENT_ID, nonce=nonce, auth_time=now) if nonce else dict(claims, aud=CLIENT_ID)
        access = dict(claims, aud=AUDIENCE, scope="openid profile", jti=secrets.token_urlsafe(12))
        self.json({"access_token": sign(access), "id_token": sign(identity), "token_type": "Bearer", "expires_in": 86400})

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
