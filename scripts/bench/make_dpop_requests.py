#!/usr/bin/env python3
"""DPoP-bound requests for the benchmark: python3 make_dpop_requests.py KEYDIR N OUTFILE [URL]

Writes one line with an RS256 access token (signed with the bench key) bound to a fresh P-256
key by `cnf.jkt` (RFC 7638 thumbprint), then N lines of ES256 DPoP proofs for `GET URL`
(default http://127.0.0.1:18090/), each with its own `jti`, `iat` = now and `ath` of the
token: every request of the run carries a proof never seen before, as a real client's would.
Made with Python `cryptography` (independent of the gateway's code). Use them within the
gateway's `tokens.dpop.maxAgeSeconds` of making them."""
import base64, hashlib, json, sys, time, uuid
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def compact(header: dict, claims: dict, sign) -> str:
    signing_input = f"{b64url(json.dumps(header, separators=(',', ':')).encode())}.{b64url(json.dumps(claims, separators=(',', ':')).encode())}"
    return f"{signing_input}.{b64url(sign(signing_input.encode()))}"


keydir, count, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
url = sys.argv[4] if len(sys.argv) > 4 else "http://127.0.0.1:18090/"
issuer_key = serialization.load_pem_private_key(open(f"{keydir}/rs256-private.pem", "rb").read(), password=None)
proof_key = ec.generate_private_key(ec.SECP256R1())
numbers = proof_key.public_key().public_numbers()
jwk = {"crv": "P-256", "kty": "EC", "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}
# RFC 7638: the required members in lexicographic order, no whitespace.
thumbprint = b64url(hashlib.sha256(json.dumps(jwk, separators=(",", ":"), sort_keys=True).encode()).digest())
now = int(time.time())
token = compact(
    {"alg": "RS256", "typ": "JWT", "kid": "bench-rs256"},
    {"iss": "https://auth.bench.local", "sub": "bench-user-42", "aud": "bench-gateway", "iat": now, "nbf": now - 60,
     "exp": 4102444800, "scope": "read:items write:items", "cnf": {"jkt": thumbprint}},
    lambda data: issuer_key.sign(data, padding.PKCS1v15(), hashes.SHA256()),
)
ath = b64url(hashlib.sha256(token.encode()).digest())


def es256(data: bytes) -> bytes:
    r, s = decode_dss_signature(proof_key.sign(data, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


with open(out, "w") as f:
    f.write(token + "\n")
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}
    for _ in range(count):
        f.write(compact(header, {"jti": str(uuid.uuid4()), "htm": "GET", "htu": url, "iat": now, "ath": ath}, es256) + "\n")
