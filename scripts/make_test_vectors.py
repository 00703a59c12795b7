#!/usr/bin/env python3
"""Generate the JWT verification test vectors for auth-gateway.

What it writes (everything under Tests/AuthGatewayTests/Fixtures/jwt/, which is
deleted and recreated from scratch on every run):

  keys/rsa.pub.pem          RSA-2048 public key, SubjectPublicKeyInfo PEM
  keys/rsa.pub.b64          same key, base64 (standard alphabet) of the DER SPKI,
                            one line, no trailing newline
  keys/rsa.cert.pem         self-signed X.509 certificate over the rsa key
                            (CN=issuer.test, valid 2020-01-01 .. 2100-01-01)
  keys/rsa-pss.pub.pem      second RSA-2048 key, used for PS256/PS384/PS512
  keys/ec256.pub.pem        P-256 key   (ES256)
  keys/ec384.pub.pem        P-384 key   (ES384)
  keys/ec521.pub.pem        P-521 key   (ES512)
  keys/ed25519.pub.pem      Ed25519 key (EdDSA)
  keys/other-rsa.pub.pem    RSA-2048 key of the second issuer (https://other.test)
  keys/rsa-1024.pub.pem     RSA-1024 key; must be refused when loaded (too weak)
  keys/enc-rsa.pub.pem      RSA-2048 key published in the JWKS with "use":"enc"
  keys/jwks.json            JWKS with kids rsa-1, pss-1, ec256-1, ec384-1, ec521-1,
                            ed-1 (signature keys), hmac-1 (oct, must be ignored)
                            and enc-1 ("use":"enc", must not verify signatures)
  keys/private/*.key.pem    the matching private keys, PKCS#8 PEM
  vectors.json              the token vectors (see VERIFIER CONFIGURATION below)

How to run (from the repository root):

    python3 scripts/make_test_vectors.py                # regenerate + self-check
    python3 scripts/make_test_vectors.py --check        # only re-check existing files
    python3 scripts/make_test_vectors.py --add-missing  # append new vectors, keep the rest

Requirements: python3 with `cryptography` (>= 42) and `joserfc` (>= 1.0).

Key material is freshly generated on each run; claims, headers and timestamps
are fixed, so only the keys and the signatures change between runs.
`--add-missing` instead keeps the committed keys and vectors byte for byte and
appends the vectors of `build_extra_vectors` whose names are not in the file
yet; those are all RS256 (PKCS#1 v1.5 signatures are deterministic) with the
committed rsa key, so running it again changes nothing.

EXTREME VALUES the extra vectors pin down (decided from the gateway's JSON
reader and verifier, and mirrored by the reference verifier below):
  * a NumericDate is read as an IEEE double and compared as given: any exp
    that is a finite double (1e300, or an integer beyond 2^63 such as
    2^64+1, read as ~1.8e19) is simply far in the future, so the token is
    valid; a huge negative exp (-1e300, -(2^64+1)) is expired. Nothing is
    converted to a fixed-width integer, so nothing overflows or traps.
  * a number beyond the double range (1e400, a 400-digit integer) makes the
    JSON text invalid (RFC 8259 section 9 lets a parser limit the range): the
    token is malformed, never read as infinity.
  * JSON nesting is bounded at 64 levels of arrays/objects counting the
    header or payload object itself (64 passes, 65 is malformed); a payload or
    header with 10 000 nested arrays is malformed, refused without recursing
    to that depth.

The self-check (always run after generating) does two independent things:
  * every vector expected "valid" is verified with joserfc against the key the
    gateway would select, and its claims are validated with joserfc's
    JWTClaimsRegistry at now=1700001000, leeway 30;
  * every vector is run through a small strict reference verifier written in
    this file (see `reference_verify`), which must produce exactly the
    "expect" value.  The reference verifier documents the order of checks the
    expectations assume.  Vectors expecting bad_signature are additionally
    checked to fail joserfc verification with the configured key.

VERIFIER CONFIGURATION the vectors assume ("kidConfig": "static"):
  issuer https://issuer.test, audiences ["gateway-tests"], leeway 30 s,
  requiredClaims ["sub"] (exp is always required), keys:
    rsa-1 RS256, rsa-384 RS384, rsa-512 RS512      -> rsa.pub.pem
    pss-256 PS256, pss-384 PS384, pss-512 PS512    -> rsa-pss.pub.pem
    ec256-1 ES256, ec384-1 ES384, ec521-1 ES512    -> ec256/ec384/ec521
    ed-1 EdDSA                                     -> ed25519.pub.pem
    (no kid) RS256                                 -> rsa.pub.pem
  issuer https://other.test, no audiences, requiredClaims [], keys:
    other-1 RS256                                  -> other-rsa.pub.pem
"kidConfig": "jwks" means the issuer https://issuer.test is configured from
keys/jwks.json instead of the static keys (other issuer unchanged).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import shutil
import sys
import warnings

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.x509.oid import NameOID

warnings.filterwarnings("ignore")  # joserfc warns that "EdDSA" is deprecated (RFC 9864)

from joserfc import jwe, jwk, jws  # noqa: E402
from joserfc.jws import JWSRegistry  # noqa: E402
from joserfc.jwt import JWTClaimsRegistry  # noqa: E402

# joserfc refuses unregistered header names by default; the gateway must ignore
# unknown non-critical header parameters, so sign/verify with a lax registry.
def lax(alg):
    return JWSRegistry(algorithms=[alg], strict_check_header=False)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "Tests", "AuthGatewayTests", "Fixtures", "jwt")
KEYS = os.path.join(OUT, "keys")
PRIV = os.path.join(KEYS, "private")

NOW = 1700001000
ISSUER = "https://issuer.test"
OTHER_ISSUER = "https://other.test"
AUDIENCE = "gateway-tests"
LEEWAY = 30
IAT = 1700000000
EXP = 1700003600

BASE_CLAIMS = {
    "iss": ISSUER,
    "sub": "user-42",
    "aud": AUDIENCE,
    "iat": IAT,
    "nbf": IAT,
    "exp": EXP,
    "email": "alice@example.com",
    "roles": ["reader", "writer"],
    "scope": "read write",
}

REASONS = {
    "valid", "malformed", "unsupported_algorithm", "unknown_key",
    "algorithm_mismatch", "bad_signature", "critical_header", "expired",
    "not_yet_valid", "issued_in_future", "wrong_issuer", "wrong_audience",
    "missing_claim", "invalid_claim",
}

SUPPORTED_ALGS = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                  "ES256", "ES384", "ES512", "EdDSA"}

HASHES = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
EC_SIZES = {"ES256": 32, "ES384": 48, "ES512": 66, "ES256K": 32}

# (kid, key file stem, alg) -- mirrors what the Swift tests configure.
STATIC_ISSUER_KEYS = [
    ("rsa-1", "rsa", "RS256"), ("rsa-384", "rsa", "RS384"), ("rsa-512", "rsa", "RS512"),
    ("pss-256", "rsa-pss", "PS256"), ("pss-384", "rsa-pss", "PS384"), ("pss-512", "rsa-pss", "PS512"),
    ("ec256-1", "ec256", "ES256"), ("ec384-1", "ec384", "ES384"), ("ec521-1", "ec521", "ES512"),
    ("ed-1", "ed25519", "EdDSA"),
    (None, "rsa", "RS256"),
]
OTHER_ISSUER_KEYS = [("other-1", "other-rsa", "RS256")]


# --------------------------------------------------------------------------- #
# encoding helpers
# --------------------------------------------------------------------------- #

def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_json(obj) -> str:
    return b64u(cjson(obj).encode("utf-8"))


def cjson(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


def claims(**changes):
    """Baseline claims with changes applied; a value of DROP removes the claim."""
    c = dict(BASE_CLAIMS)
    for k, v in changes.items():
        if v is DROP:
            c.pop(k, None)
        else:
            c[k] = v
    return c


class _Drop:
    pass


DROP = _Drop()


def header(alg, kid=DROP, **extra):
    h = {"alg": alg, "typ": "JWT"}
    if kid is not DROP:
        h["kid"] = kid
    h.update(extra)
    return h


# --------------------------------------------------------------------------- #
# raw signing with `cryptography` (used for hand-built, hostile tokens)
# --------------------------------------------------------------------------- #

def raw_sign(alg: str, key, data: bytes, *, pss_salt=None) -> bytes:
    if alg.startswith("RS"):
        return key.sign(data, padding.PKCS1v15(), HASHES[alg[2:]]())
    if alg.startswith("PS"):
        h = HASHES[alg[2:]]
        salt = h.digest_size if pss_salt is None else pss_salt
        return key.sign(data, padding.PSS(mgf=padding.MGF1(h()), salt_length=salt), h())
    if alg in ("ES256", "ES384", "ES512", "ES256K"):
        h = {"ES256": hashes.SHA256, "ES384": hashes.SHA384,
             "ES512": hashes.SHA512, "ES256K": hashes.SHA256}[alg]
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(h())))
        n = EC_SIZES[alg]
        return r.to_bytes(n, "big") + s.to_bytes(n, "big")
    if alg == "EdDSA":
        return key.sign(data)
    if alg.startswith("HS"):
        return hmac.new(key, data, getattr(hashlib, "sha" + alg[2:])).digest()
    raise ValueError(alg)


def hand_token(hdr, payload, alg, key, *, pss_salt=None) -> str:
    """Compact JWS built by hand. hdr/payload may be dicts, str or bytes (raw)."""
    def seg(x):
        if isinstance(x, dict) or isinstance(x, list):
            return b64u_json(x)
        if isinstance(x, str):
            x = x.encode("utf-8")
        return b64u(x)
    si = seg(hdr) + "." + seg(payload)
    return si + "." + b64u(raw_sign(alg, key, si.encode("ascii"), pss_salt=pss_salt))


def sign_segments(h_seg: str, p_seg: str, alg, key) -> str:
    """Sign exactly the given (possibly non-canonical) segment text."""
    si = h_seg + "." + p_seg
    return si + "." + b64u(raw_sign(alg, key, si.encode("latin-1")))


# --------------------------------------------------------------------------- #
# key generation and writing
# --------------------------------------------------------------------------- #

def pub_pem(key) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def priv_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def write(path, data, mode="wb"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


def self_signed_cert(key, cn):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    return (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
            .not_valid_after(datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))


def gen_keys():
    rsa2048 = lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)  # noqa: E731
    return {
        "rsa": rsa2048(),
        "rsa-pss": rsa2048(),
        "ec256": ec.generate_private_key(ec.SECP256R1()),
        "ec384": ec.generate_private_key(ec.SECP384R1()),
        "ec521": ec.generate_private_key(ec.SECP521R1()),
        "ed25519": ed25519.Ed25519PrivateKey.generate(),
        "other-rsa": rsa2048(),
        "rsa-1024": rsa.generate_private_key(public_exponent=65537, key_size=1024),
        "enc-rsa": rsa2048(),
    }


def write_keys(k):
    for stem, key in k.items():
        write(os.path.join(KEYS, stem + ".pub.pem"), pub_pem(key))
        write(os.path.join(PRIV, stem + ".key.pem"), priv_pem(key))
    der = k["rsa"].public_key().public_bytes(serialization.Encoding.DER,
                                             serialization.PublicFormat.SubjectPublicKeyInfo)
    write(os.path.join(KEYS, "rsa.pub.b64"), base64.b64encode(der))
    cert = self_signed_cert(k["rsa"], "issuer.test")
    write(os.path.join(KEYS, "rsa.cert.pem"), cert.public_bytes(serialization.Encoding.PEM))

    def pubjwk(stem, kid, alg, use="sig"):
        params = {"kid": kid, "use": use}
        if alg:
            params["alg"] = alg
        key = jwk.import_key(pub_pem(k[stem]), parameters=params)
        return tidy(key.as_dict(private=False))

    def tidy(d):  # conventional member order: kty, kid, use, alg, then key material
        head = {m: d[m] for m in ("kty", "kid", "use", "alg") if m in d}
        return {**head, **{m: v for m, v in d.items() if m not in head}}

    hmac_secret = b"jwks-hmac-1-secret-do-not-use-for-anything-real"
    oct_key = jwk.OctKey.import_key(hmac_secret, {"kid": "hmac-1", "alg": "HS256", "use": "sig"})
    jwks = {"keys": [
        pubjwk("rsa", "rsa-1", "RS256"),
        pubjwk("rsa-pss", "pss-1", "PS256"),
        pubjwk("ec256", "ec256-1", "ES256"),
        pubjwk("ec384", "ec384-1", "ES384"),
        pubjwk("ec521", "ec521-1", "ES512"),
        pubjwk("ed25519", "ed-1", "EdDSA"),
        tidy(oct_key.as_dict(private=True)),
        # Deliberately carries "alg":"RS256" so that "use":"enc" is the ONLY
        # property that disqualifies it as a signature key.
        pubjwk("enc-rsa", "enc-1", "RS256", use="enc"),
    ]}
    write(os.path.join(KEYS, "jwks.json"), json.dumps(jwks, indent=2) + "\n", "w")
    return hmac_secret


# --------------------------------------------------------------------------- #
# vectors
# --------------------------------------------------------------------------- #

def joserfc_token(hdr, payload, alg, key) -> str:
    """Well-formed token signed by joserfc (key: cryptography private key)."""
    if isinstance(key, (rsa.RSAPrivateKey,)):
        jkey = jwk.RSAKey.import_key(priv_pem(key))
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        jkey = jwk.ECKey.import_key(priv_pem(key))
    elif isinstance(key, ed25519.Ed25519PrivateKey):
        jkey = jwk.OKPKey.import_key(priv_pem(key))
    else:
        raise TypeError(key)
    body = cjson(payload).encode("utf-8") if isinstance(payload, dict) else payload
    return jws.serialize_compact(hdr, body, jkey, registry=lax(alg))


def build_vectors(k, hmac_secret):
    V = []

    def add(name, token, expect, note, kid_config="static"):
        assert expect in REASONS, expect
        V.append({"name": name, "token": token, "kidConfig": kid_config,
                  "expect": expect, "note": note})

    rsa_k, pss_k = k["rsa"], k["rsa-pss"]
    att_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    att_ec = ec.generate_private_key(ec.SECP256R1())
    att_ed = ed25519.Ed25519PrivateKey.generate()
    k1 = ec.generate_private_key(ec.SECP256K1())
    rsa_pem_bytes = pub_pem(rsa_k)

    # ---- valid, one per algorithm ------------------------------------------------
    for alg, kid, key in [
        ("RS256", "rsa-1", rsa_k), ("RS384", "rsa-384", rsa_k), ("RS512", "rsa-512", rsa_k),
        ("PS256", "pss-256", pss_k), ("PS384", "pss-384", pss_k), ("PS512", "pss-512", pss_k),
        ("ES256", "ec256-1", k["ec256"]), ("ES384", "ec384-1", k["ec384"]),
        ("ES512", "ec521-1", k["ec521"]), ("EdDSA", "ed-1", k["ed25519"]),
    ]:
        add("valid-" + alg.lower(), joserfc_token(header(alg, kid), claims(), alg, key),
            "valid", f"baseline {alg} token, kid {kid}")

    valid_rs256 = V[0]["token"]
    valid_es256 = V[6]["token"]

    add("valid-rs256-no-kid", joserfc_token(header("RS256"), claims(), "RS256", rsa_k),
        "valid", "no kid header; matched by the kid-less RS256 key")
    add("valid-other-issuer",
        joserfc_token(header("RS256", "other-1"), claims(iss=OTHER_ISSUER, aud=DROP),
                      "RS256", k["other-rsa"]),
        "valid", "second issuer, its own key, no aud (no audiences configured)")
    add("valid-other-issuer-no-sub",
        joserfc_token(header("RS256", "other-1"), claims(iss=OTHER_ISSUER, aud=DROP, sub=DROP),
                      "RS256", k["other-rsa"]),
        "valid", "second issuer has no required claims, so sub may be absent")
    add("valid-aud-array", joserfc_token(header("RS256", "rsa-1"),
                                         claims(aud=["x", AUDIENCE]), "RS256", rsa_k),
        "valid", "aud array containing our audience")
    add("valid-within-leeway-exp", joserfc_token(header("RS256", "rsa-1"),
                                                 claims(exp=NOW - 20), "RS256", rsa_k),
        "valid", "exp 20 s in the past, within 30 s leeway")
    add("valid-within-leeway-nbf", joserfc_token(header("RS256", "rsa-1"),
                                                 claims(nbf=NOW + 20), "RS256", rsa_k),
        "valid", "nbf 20 s in the future, within 30 s leeway")
    add("valid-within-leeway-iat", joserfc_token(header("RS256", "rsa-1"),
                                                 claims(iat=NOW + 20), "RS256", rsa_k),
        "valid", "iat 20 s in the future, within 30 s leeway")
    add("valid-no-nbf-no-iat", joserfc_token(header("RS256", "rsa-1"),
                                             claims(nbf=DROP, iat=DROP), "RS256", rsa_k),
        "valid", "nbf and iat are optional")
    add("exp-float-ok", joserfc_token(header("RS256", "rsa-1"),
                                      claims(exp=EXP + 0.5), "RS256", rsa_k),
        "valid", "non-integer NumericDate exp (RFC 7519 allows fractions)")
    add("typ-other", joserfc_token(header("RS256", "rsa-1", typ="at+jwt"), claims(),
                                   "RS256", rsa_k),
        "valid", "typ at+jwt; typ is not checked")
    add("unknown-header-param-ignored",
        joserfc_token({"alg": "RS256", "typ": "JWT", "kid": "rsa-1", "x-custom": "hello"},
                      claims(), "RS256", rsa_k),
        "valid", "unknown non-critical header parameter is ignored")
    ws_hdr = '{\n  "alg" : "RS256",\n  "typ" : "JWT",\n  "kid" : "rsa-1"\n}'
    add("header-json-with-whitespace", hand_token(ws_hdr, claims(), "RS256", rsa_k),
        "valid", "insignificant JSON whitespace in header is fine")

    # ---- time / claim checks ---------------------------------------------------------
    def rs(c, **hx):
        return joserfc_token(header("RS256", "rsa-1", **hx), c, "RS256", rsa_k)

    add("expired", rs(claims(exp=NOW - 31)), "expired", "exp 31 s in the past (leeway 30)")
    add("expired-long-ago",
        rs(claims(exp=NOW - 8 * 86400, iat=NOW - 8 * 86400 - 3600, nbf=NOW - 8 * 86400 - 3600)),
        "expired", "exp 8 days in the past")
    add("nbf-future", rs(claims(nbf=NOW + 31)), "not_yet_valid", "nbf 31 s in the future")
    add("iat-future", rs(claims(iat=NOW + 31)), "issued_in_future", "iat 31 s in the future")
    add("wrong-issuer", rs(claims(iss="https://evil.test")), "wrong_issuer",
        "unconfigured issuer, otherwise valid rsa-1 signature")
    add("no-issuer", rs(claims(iss=DROP)), "wrong_issuer", "iss claim absent")
    add("iss-trailing-slash", rs(claims(iss=ISSUER + "/")), "wrong_issuer",
        "iss must match exactly (trailing slash)")
    add("wrong-audience", rs(claims(aud="other-service")), "wrong_audience",
        "aud is a different audience")
    add("aud-array-without-ours", rs(claims(aud=["a", "b"])), "wrong_audience",
        "aud array without our audience")
    add("aud-empty-array", rs(claims(aud=[])), "wrong_audience", "aud is an empty array")
    add("aud-superstring", rs(claims(aud=AUDIENCE + "-evil")), "wrong_audience",
        "aud must match exactly, not by prefix")
    add("missing-aud", rs(claims(aud=DROP)), "missing_claim",
        "no aud although the issuer has audiences configured")
    add("missing-exp", rs(claims(exp=DROP)), "missing_claim", "exp is always required")
    add("missing-sub", rs(claims(sub=DROP)), "missing_claim", "sub is a configured required claim")
    add("exp-string", rs(claims(exp=str(EXP))), "invalid_claim", "exp is a JSON string")
    add("exp-bool", rs(claims(exp=True)), "invalid_claim", "exp is a JSON boolean")
    add("nbf-string", rs(claims(nbf=str(IAT))), "invalid_claim", "nbf is a JSON string")
    add("iat-string", rs(claims(iat=str(IAT))), "invalid_claim", "iat is a JSON string")

    # ---- algorithm attacks -------------------------------------------------------------
    none_h = {"alg": "none", "typ": "JWT"}
    add("alg-none", b64u_json(none_h) + "." + b64u_json(claims()) + ".",
        "unsupported_algorithm", "alg none, empty signature")
    none_kid_h = {"alg": "none", "typ": "JWT", "kid": "rsa-1"}
    add("alg-none-with-sig", hand_token(none_kid_h, claims(), "RS256", rsa_k),
        "unsupported_algorithm",
        "alg none + kid rsa-1 with a real RS256 signature over the input")
    add("alg-None-case", b64u_json({"alg": "None", "typ": "JWT"}) + "." + b64u_json(claims()) + ".",
        "unsupported_algorithm", "alg 'None' (case variant), empty signature")
    add("alg-lowercase", hand_token(header("rs256", "rsa-1"), claims(), "RS256", rsa_k),
        "unsupported_algorithm", "alg names are case-sensitive ('rs256')")
    add("hs256-key-confusion", hand_token(header("HS256", "rsa-1"), claims(), "HS256", rsa_pem_bytes),
        "unsupported_algorithm", "HS256 keyed with the bytes of rsa.pub.pem (key confusion)")
    add("hs256-no-kid", hand_token(header("HS256"), claims(), "HS256", b"secret"),
        "unsupported_algorithm", "HS256 without kid")
    add("unknown-alg", hand_token(header("ES256K", "ec256-1"), claims(), "ES256K", k1),
        "unsupported_algorithm", "ES256K (secp256k1) is not supported")
    add("missing-alg", hand_token({"typ": "JWT", "kid": "rsa-1"}, claims(), "RS256", rsa_k),
        "malformed", "header without alg (alg is REQUIRED by RFC 7515)")
    add("alg-mismatch-es256-on-rsa-kid", hand_token(header("ES256", "rsa-1"), claims(), "ES256", k["ec256"]),
        "algorithm_mismatch", "valid ES256 signature (ec256 key) but kid rsa-1 is RS256")
    add("alg-mismatch-rs384-on-rs256-kid", hand_token(header("RS384", "rsa-1"), claims(), "RS384", rsa_k),
        "algorithm_mismatch", "RS384 with the right RSA key but kid rsa-1 is RS256")
    add("alg-mismatch-ps256-on-rs256-kid", hand_token(header("PS256", "rsa-1"), claims(), "PS256", rsa_k),
        "algorithm_mismatch", "PS256 with the right RSA key but kid rsa-1 is RS256")
    add("alg-mismatch-rs256-on-pss-kid", hand_token(header("RS256", "pss-256"), claims(), "RS256", pss_k),
        "algorithm_mismatch", "RS256 with the PSS key but kid pss-256 is PS256")

    # ---- key selection -------------------------------------------------------------------
    add("unknown-kid", hand_token(header("RS256", "nope"), claims(), "RS256", rsa_k),
        "unknown_key", "kid not configured")
    add("kid-empty-string", hand_token(header("RS256", ""), claims(), "RS256", rsa_k),
        "unknown_key", "kid '' is a kid, not 'no kid'; must not fall back to kid-less key")
    add("kid-path-traversal", hand_token(header("RS256", "../../../../dev/null"), claims(), "RS256", rsa_k),
        "unknown_key", "kid is an opaque string, never a path")
    add("no-kid-es256-without-matching-key", hand_token(header("ES256"), claims(), "ES256", k["ec256"]),
        "unknown_key", "no kid, and no kid-less ES256 key is configured")
    add("cross-issuer-kid", hand_token(header("RS256", "rsa-1"), claims(iss=OTHER_ISSUER, aud=DROP),
                                       "RS256", rsa_k),
        "unknown_key", "iss other.test but kid rsa-1 belongs to issuer.test")
    add("cross-issuer-kid-reverse", hand_token(header("RS256", "other-1"), claims(), "RS256", k["other-rsa"]),
        "unknown_key", "iss issuer.test but kid other-1 belongs to other.test")
    add("cross-issuer-no-kid", hand_token(header("RS256"), claims(iss=OTHER_ISSUER, aud=DROP),
                                          "RS256", rsa_k),
        "unknown_key", "iss other.test, no kid, signed by issuer.test's kid-less key")

    # ---- signature checks ----------------------------------------------------------------
    add("bad-signature-rs256", hand_token(header("RS256", "rsa-1"), claims(), "RS256", att_rsa),
        "bad_signature", "RS256 signed by a different RSA key")
    add("bad-signature-rs256-no-kid", hand_token(header("RS256"), claims(), "RS256", att_rsa),
        "bad_signature", "no kid, RS256 signed by a different RSA key")
    add("bad-signature-es256", hand_token(header("ES256", "ec256-1"), claims(), "ES256", att_ec),
        "bad_signature", "ES256 signed by a different P-256 key")
    add("bad-signature-eddsa", hand_token(header("EdDSA", "ed-1"), claims(), "EdDSA", att_ed),
        "bad_signature", "EdDSA signed by a different Ed25519 key")
    h, p, s = valid_rs256.split(".")
    add("tampered-payload", h + "." + b64u_json(claims(sub="admin")) + "." + s,
        "bad_signature", "valid rs256 token with sub changed to admin after signing")
    trunc = s[:-10]
    add("truncated-signature", h + "." + p + "." + trunc,
        "bad_signature" if strict_b64u_decode(trunc) is not None else "malformed",
        f"last 10 signature chars removed ({len(trunc)} chars, decodes to "
        f"{len(strict_b64u_decode(trunc) or b'')} bytes)")
    sig = base64.urlsafe_b64decode(s + "==")
    add("rsa-signature-wrong-length", h + "." + p + "." + b64u(b"\x00" + sig),
        "bad_signature", "valid RS256 signature with a leading zero byte (257 bytes)")
    add("empty-signature-rs256", h + "." + p + ".", "bad_signature", "RS256 with empty signature")
    eh, ep, es = valid_es256.split(".")
    esig = base64.urlsafe_b64decode(es + "==")
    r, sv = int.from_bytes(esig[:32], "big"), int.from_bytes(esig[32:], "big")
    add("ecdsa-der-signature", eh + "." + ep + "." + b64u(encode_dss_signature(r, sv)),
        "bad_signature", "ES256 signature DER-encoded instead of raw r||s")
    add("ecdsa-signature-wrong-length",
        eh + "." + ep + "." + b64u(r.to_bytes(33, "big") + sv.to_bytes(33, "big")),
        "bad_signature", "ES256 r and s each zero-padded to 33 bytes (66-byte signature)")
    add("ecdsa-zero-signature", eh + "." + ep + "." + b64u(bytes(64)),
        "bad_signature", "r = s = 0 (CVE-2022-21449 'psychic signature')")
    n256 = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    add("ecdsa-r-s-equal-n", eh + "." + ep + "." + b64u(n256.to_bytes(32, "big") * 2),
        "bad_signature", "r = s = curve order n (out of range)")
    add("ps256-wrong-salt-length",
        hand_token(header("PS256", "pss-256"), claims(), "PS256", pss_k, pss_salt=0),
        "bad_signature", "PSS salt length 0; RFC 7518 requires salt = hash length")

    # ---- header injection ----------------------------------------------------------------
    att_jwk = jwk.RSAKey.import_key(pub_pem(att_rsa), {"kid": "attacker"}).as_dict(private=False)
    add("jwk-header-injection", hand_token(header("RS256", "attacker", jwk=att_jwk), claims(), "RS256", att_rsa),
        "unknown_key", "attacker key embedded as header jwk, kid attacker")
    add("jwk-header-injection-known-kid",
        hand_token(header("RS256", "rsa-1", jwk=att_jwk), claims(), "RS256", att_rsa),
        "bad_signature", "attacker key embedded as header jwk, kid rsa-1")
    add("jwk-header-injection-no-kid",
        hand_token(header("RS256", jwk=att_jwk), claims(), "RS256", att_rsa),
        "bad_signature", "attacker key embedded as header jwk, no kid")
    add("jku-header", hand_token(header("RS256", "attacker", jku="https://evil.test/jwks"),
                                 claims(), "RS256", att_rsa),
        "unknown_key", "jku pointing at attacker JWKS must not be fetched")
    add("x5u-header", hand_token(header("RS256", "attacker", x5u="https://evil.test/cert.pem"),
                                 claims(), "RS256", att_rsa),
        "unknown_key", "x5u pointing at attacker cert must not be fetched")
    att_cert = self_signed_cert(att_rsa, "issuer.test")
    x5c = [base64.b64encode(att_cert.public_bytes(serialization.Encoding.DER)).decode()]
    add("x5c-header", hand_token(header("RS256", "rsa-1", x5c=x5c), claims(), "RS256", att_rsa),
        "bad_signature", "attacker self-signed cert (CN=issuer.test) in x5c, kid rsa-1")

    # ---- crit ------------------------------------------------------------------------------
    add("crit-unknown", hand_token(header("RS256", "rsa-1", crit=["exp-ext"], **{"exp-ext": 1}),
                                   claims(), "RS256", rsa_k),
        "critical_header", "crit lists an extension we do not understand")
    add("crit-b64", hand_token(header("RS256", "rsa-1", crit=["b64"], b64=False), claims(), "RS256", rsa_k),
        "critical_header", "RFC 7797 b64:false (signed as ordinary JWS) must be refused")
    add("crit-empty-array", hand_token(header("RS256", "rsa-1", crit=[]), claims(), "RS256", rsa_k),
        "critical_header", "crit [] is invalid (RFC 7515 4.1.11)")
    add("crit-registered-name", hand_token(header("RS256", "rsa-1", crit=["alg"]), claims(), "RS256", rsa_k),
        "critical_header", "crit must not list registered names such as alg")

    # ---- malformed -------------------------------------------------------------------------
    add("four-segments", valid_rs256 + "." + s, "malformed", "four dot-separated segments")
    add("two-segments", h + "." + p, "malformed", "two segments (no signature part)")
    jwe_tok = jwe.encrypt_compact({"alg": "RSA-OAEP-256", "enc": "A256GCM", "kid": "rsa-1"},
                                  cjson(claims()).encode(), jwk.RSAKey.import_key(rsa_pem_bytes),
                                  algorithms=["RSA-OAEP-256", "A256GCM"])
    add("five-segments-jwe-like", jwe_tok, "malformed", "a real JWE (5 segments) encrypted to rsa-1")
    add("empty-token", "", "malformed", "empty string")
    add("only-dots", "..", "malformed", "three empty segments")
    add("bad-base64-header", sign_segments("!" + h[1:], p, "RS256", rsa_k),
        "malformed", "header segment contains '!'")
    bad_len_h = h
    while len(bad_len_h) % 4 != 1:
        bad_len_h += "A"
    add("base64-invalid-length", sign_segments(bad_len_h, p, "RS256", rsa_k),
        "malformed", "header segment length % 4 == 1 (impossible base64)")

    def pad(x):
        return x + "=" * (-len(x) % 4)
    ph, pp = pad(h), pad(p)
    padded = sign_segments(ph, pp, "RS256", rsa_k)
    ps = padded.split(".")
    padded = ph + "." + pp + "." + pad(ps[2])
    assert "=" in padded
    add("base64-padding", padded, "malformed",
        "segments carry '=' padding (signed over the padded text)")
    std = None
    for i in range(200):
        t = joserfc_token(header("ES256", "ec256-1"), claims(), "ES256", k["ec256"])
        th, tp, ts = t.split(".")
        if "-" in ts or "_" in ts:
            std = th + "." + tp + "." + ts.replace("-", "+").replace("_", "/")
            break
    assert std
    add("base64-standard-alphabet", std, "malformed",
        "signature uses '+' and '/' (standard base64) instead of '-' and '_'")
    ws = sign_segments(h, p[:20] + " " + p[20:], "RS256", rsa_k)
    add("whitespace-in-token", ws, "malformed", "space inside payload segment (signed over it)")
    add("header-not-json", hand_token("not json", claims(), "RS256", rsa_k),
        "malformed", "header decodes to non-JSON text")
    add("header-json-array", hand_token([header("RS256", "rsa-1")], claims(), "RS256", rsa_k),
        "malformed", "header is a JSON array, not an object")
    add("header-invalid-utf8",
        hand_token(b'{"alg":"RS256","typ":"JWT","kid":"rsa-1","x":"\xff\xfe"}', claims(), "RS256", rsa_k),
        "malformed", "header contains invalid UTF-8 bytes")
    add("payload-not-json", hand_token(header("RS256", "rsa-1"), "hello world", "RS256", rsa_k),
        "malformed", "validly signed non-JSON payload")
    add("payload-json-array", hand_token(header("RS256", "rsa-1"), [claims()], "RS256", rsa_k),
        "malformed", "validly signed payload that is a JSON array")
    add("payload-trailing-garbage",
        hand_token(header("RS256", "rsa-1"), cjson(claims()) + "xyz", "RS256", rsa_k),
        "malformed", "payload JSON object followed by garbage")
    add("duplicate-alg-header",
        hand_token('{"alg":"none","alg":"RS256","typ":"JWT","kid":"rsa-1"}', claims(), "RS256", rsa_k),
        "malformed", "header has alg twice (none, RS256); ambiguous JSON")
    add("duplicate-alg-header-escaped",
        hand_token('{"\\u0061lg":"none","alg":"RS256","typ":"JWT","kid":"rsa-1"}', claims(), "RS256", rsa_k),
        "malformed", "alg twice, first spelled \\u0061lg; duplicate after unescaping")
    dup_payload = cjson(claims())[:-1] + ',"sub":"admin"}'
    add("duplicate-claim", hand_token(header("RS256", "rsa-1"), dup_payload, "RS256", rsa_k),
        "malformed", "payload has sub twice (user-42, admin)")

    # ---- JWKS-configured issuer ------------------------------------------------------------
    for name, alg, kid, key in [
        ("jwks-valid-rs256", "RS256", "rsa-1", rsa_k),
        ("jwks-valid-ps256", "PS256", "pss-1", pss_k),
        ("jwks-valid-es256", "ES256", "ec256-1", k["ec256"]),
        ("jwks-valid-es384", "ES384", "ec384-1", k["ec384"]),
        ("jwks-valid-es512", "ES512", "ec521-1", k["ec521"]),
        ("jwks-valid-eddsa", "EdDSA", "ed-1", k["ed25519"]),
    ]:
        add(name, joserfc_token(header(alg, kid), claims(), alg, key), "valid",
            f"{alg} with JWKS key {kid}", "jwks")
    add("jwks-hmac-kid", hand_token(header("HS256", "hmac-1"), claims(), "HS256", hmac_secret),
        "unsupported_algorithm", "HS256 with the JWKS oct key's real secret, kid hmac-1", "jwks")
    add("jwks-hmac-kid-rs256", hand_token(header("RS256", "hmac-1"), claims(), "RS256", rsa_k),
        "unknown_key", "kid of the (ignored) oct key with RS256", "jwks")
    add("enc-key-kid", hand_token(header("RS256", "enc-1"), claims(), "RS256", k["enc-rsa"]),
        "unknown_key", "RS256 signed by the use:enc key, kid enc-1", "jwks")
    add("jwks-unknown-kid", hand_token(header("RS256", "rsa-384"), claims(), "RS256", rsa_k),
        "unknown_key", "static-only kid rsa-384 is not in the JWKS", "jwks")
    add("jwks-alg-mismatch", hand_token(header("RS384", "rsa-1"), claims(), "RS384", rsa_k),
        "algorithm_mismatch", "RS384 but JWKS key rsa-1 has alg RS256", "jwks")

    V.extend(build_extra_vectors(rsa_k))

    names = [v["name"] for v in V]
    assert len(names) == len(set(names)), "duplicate vector names"
    for n in names:
        assert re.fullmatch(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*", n), n
    return V


MAX_JSON_DEPTH = 64   # the gateway's JSONValue.maximumDepth
DEEP_NESTING = 10000


def nested_arrays(levels: int) -> str:
    return "[" * levels + "]" * levels


def build_extra_vectors(rsa_k):
    """Extreme numbers and nesting (see EXTREME VALUES in the module docstring).
    RS256 only, so the tokens depend on nothing but the rsa key."""
    V = []

    def add(name, token, expect, note):
        assert expect in REASONS, expect
        V.append({"name": name, "token": token, "kidConfig": "static", "expect": expect, "note": note})

    def rs(c, hdr=None):
        return hand_token(hdr or header("RS256", "rsa-1"), c, "RS256", rsa_k)

    def with_raw_claim(name, literal):
        """Baseline claims as JSON text with one member's value spelled `literal` exactly."""
        text = cjson(claims(**{name: DROP}))
        return text[:-1] + "," + json.dumps(name) + ":" + literal + "}"

    add("exp-huge-float", rs(claims(exp=1e300)), "valid",
        "exp 1e300: a finite NumericDate far in the future, compared as a double")
    add("exp-huge-integer", rs(claims(exp=2**64 + 1)), "valid",
        "exp 2^64+1 (beyond Int64): read as a double (~1.8e19), no integer overflow")
    add("exp-huge-negative-float", rs(claims(exp=-1e300)), "expired",
        "exp -1e300: expired, and so long ago that no refresh window covers it")
    add("exp-huge-negative-integer", rs(claims(exp=-(2**64 + 1))), "expired",
        "exp -(2^64+1): expired")
    add("exp-beyond-double-range", rs(with_raw_claim("exp", "1e400")), "malformed",
        "exp 1e400 overflows a double: the payload JSON is refused, not read as infinity")
    add("exp-integer-beyond-double-range", rs(with_raw_claim("exp", "9" * 400)), "malformed",
        "exp is a 400-digit integer, beyond the double range: payload JSON refused")
    add("nbf-huge-float", rs(claims(nbf=1e300)), "not_yet_valid", "nbf 1e300: not valid before then")
    add("iat-huge-negative-float", rs(claims(iat=-1e300, nbf=DROP)), "valid",
        "iat -1e300: issued long ago, which is allowed")
    add("payload-nested-64-levels",
        rs(with_raw_claim("deep", nested_arrays(MAX_JSON_DEPTH - 1))), "valid",
        "a claim of 63 nested arrays: 64 levels with the payload object, the gateway's bound")
    add("payload-nested-65-levels",
        rs(with_raw_claim("deep", nested_arrays(MAX_JSON_DEPTH))), "malformed",
        "a claim of 64 nested arrays: 65 levels with the payload object, one beyond the bound")
    add("payload-nested-10000-arrays",
        rs(with_raw_claim("deep", nested_arrays(DEEP_NESTING))), "malformed",
        "validly signed payload with a claim of 10 000 nested arrays: refused without deep recursion")
    add("header-nested-10000-arrays",
        rs(claims(), '{"alg":"RS256","typ":"JWT","kid":"rsa-1","x":' + nested_arrays(DEEP_NESTING) + "}"),
        "malformed", "validly signed header with a member of 10 000 nested arrays")
    return V


# --------------------------------------------------------------------------- #
# strict reference verifier (independent of the Swift implementation)
# --------------------------------------------------------------------------- #

B64U_RE = re.compile(r"[A-Za-z0-9_-]*")


def strict_b64u_decode(s: str):
    """base64url without padding; rejects other alphabets, '=', bad lengths and
    non-canonical trailing bits. Returns bytes or None."""
    if not B64U_RE.fullmatch(s) or len(s) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except Exception:
        return None
    return raw if b64u(raw) == s else None


class _Dup(Exception):
    pass


def _no_dups(pairs):
    d = {}
    for key, v in pairs:
        if key in d:
            raise _Dup(key)
        d[key] = v
    return d


def json_depth(text: str) -> int:
    """Deepest nesting of arrays/objects, strings skipped (no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def finite_float(literal: str) -> float:
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number beyond the double range: " + literal[:20])
    return value


def double_range_int(literal: str) -> int:
    value = int(literal)
    try:
        float(value)
    except OverflowError:
        raise ValueError("integer beyond the double range") from None
    return value


def strict_json_object(raw: bytes):
    try:
        text = raw.decode("utf-8", errors="strict")
        if json_depth(text) > MAX_JSON_DEPTH:
            return None
        obj = json.loads(text, object_pairs_hook=_no_dups,
                         parse_float=finite_float, parse_int=double_range_int,
                         parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (UnicodeDecodeError, ValueError, _Dup):
        return None
    return obj if isinstance(obj, dict) else None


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def load_pub(stem):
    with open(os.path.join(KEYS, stem + ".pub.pem"), "rb") as f:
        return serialization.load_pem_public_key(f.read())


def jwk_to_crypto(j):
    def i(x):
        return int.from_bytes(base64.urlsafe_b64decode(x + "=" * (-len(x) % 4)), "big")
    if j["kty"] == "RSA":
        return rsa.RSAPublicNumbers(i(j["e"]), i(j["n"])).public_key()
    if j["kty"] == "EC":
        curve = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}[j["crv"]]
        return ec.EllipticCurvePublicNumbers(i(j["x"]), i(j["y"]), curve).public_key()
    if j["kty"] == "OKP" and j["crv"] == "Ed25519":
        return ed25519.Ed25519PublicKey.from_public_bytes(
            base64.urlsafe_b64decode(j["x"] + "=" * (-len(j["x"]) % 4)))
    return None


def load_config(kid_config):
    """{issuer: {"audiences": [...], "required": [...], "keys": [(kid, alg, key)]}}"""
    if kid_config == "static":
        main_keys = [(kid, alg, load_pub(stem)) for kid, stem, alg in STATIC_ISSUER_KEYS]
    else:
        with open(os.path.join(KEYS, "jwks.json")) as f:
            jwks = json.load(f)
        main_keys = []
        for j in jwks["keys"]:
            if j.get("kty") == "oct" or j.get("use", "sig") != "sig" or "alg" not in j:
                continue
            main_keys.append((j.get("kid"), j["alg"], jwk_to_crypto(j)))
    return {
        ISSUER: {"audiences": [AUDIENCE], "required": ["sub"], "keys": main_keys},
        OTHER_ISSUER: {"audiences": [], "required": [],
                       "keys": [(kid, alg, load_pub(stem)) for kid, stem, alg in OTHER_ISSUER_KEYS]},
    }


def raw_verify(alg, key, data, sig) -> bool:
    try:
        if alg.startswith("RS"):
            if not isinstance(key, rsa.RSAPublicKey) or len(sig) != key.key_size // 8:
                return False
            key.verify(sig, data, padding.PKCS1v15(), HASHES[alg[2:]]())
        elif alg.startswith("PS"):
            if not isinstance(key, rsa.RSAPublicKey) or len(sig) != key.key_size // 8:
                return False
            h = HASHES[alg[2:]]
            key.verify(sig, data, padding.PSS(mgf=padding.MGF1(h()), salt_length=h.digest_size), h())
        elif alg.startswith("ES"):
            n = EC_SIZES[alg]
            if not isinstance(key, ec.EllipticCurvePublicKey) or len(sig) != 2 * n:
                return False
            r, s = int.from_bytes(sig[:n], "big"), int.from_bytes(sig[n:], "big")
            key.verify(encode_dss_signature(r, s), data, ec.ECDSA(HASHES[alg[2:5]]()))
        elif alg == "EdDSA":
            if not isinstance(key, ed25519.Ed25519PublicKey):
                return False
            key.verify(sig, data)
        else:
            return False
        return True
    except (InvalidSignature, ValueError):
        return False


def reference_verify(token: str, cfg) -> str:
    """Order of checks assumed by the expectations:
    structure -> alg -> crit -> issuer -> key selection -> signature -> claims."""
    parts = token.split(".")
    if len(parts) != 3:
        return "malformed"
    decoded = [strict_b64u_decode(x) for x in parts]
    if any(d is None for d in decoded):
        return "malformed"
    hdr, payload = strict_json_object(decoded[0]), strict_json_object(decoded[1])
    if hdr is None or payload is None:
        return "malformed"
    alg = hdr.get("alg")
    if not isinstance(alg, str):
        return "malformed"
    if "kid" in hdr and not isinstance(hdr["kid"], str):
        return "malformed"
    if alg not in SUPPORTED_ALGS:
        return "unsupported_algorithm"
    if "crit" in hdr:
        return "critical_header"  # we understand no extensions
    iss = payload.get("iss")
    if not isinstance(iss, str) or iss not in cfg:
        return "wrong_issuer"
    icfg = cfg[iss]
    if "kid" in hdr:
        cands = [(a, key) for kid, a, key in icfg["keys"] if kid == hdr["kid"]]
        if not cands:
            return "unknown_key"
        if all(a != alg for a, _ in cands):
            return "algorithm_mismatch"
        cands = [(a, key) for a, key in cands if a == alg]
    else:
        cands = [(a, key) for kid, a, key in icfg["keys"] if kid is None and a == alg]
        if not cands:
            return "unknown_key"
    si = (parts[0] + "." + parts[1]).encode("ascii")
    if not any(raw_verify(alg, key, si, decoded[2]) for _, key in cands):
        return "bad_signature"
    for c in ("exp", "nbf", "iat"):
        if c in payload and not is_number(payload[c]):
            return "invalid_claim"
    for c in ["exp"] + icfg["required"]:
        if c not in payload:
            return "missing_claim"
    if icfg["audiences"]:
        if "aud" not in payload:
            return "missing_claim"
        aud = payload["aud"]
        auds = [aud] if isinstance(aud, str) else aud
        if not isinstance(auds, list) or not all(isinstance(a, str) for a in auds):
            return "invalid_claim"
        if not set(auds) & set(icfg["audiences"]):
            return "wrong_audience"
    if not NOW < payload["exp"] + LEEWAY:
        return "expired"
    if "nbf" in payload and NOW + LEEWAY < payload["nbf"]:
        return "not_yet_valid"
    if "iat" in payload and payload["iat"] > NOW + LEEWAY:
        return "issued_in_future"
    return "valid"


# --------------------------------------------------------------------------- #
# self-check
# --------------------------------------------------------------------------- #

def joserfc_key_for(token, kid_config):
    hdr = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    kid, alg = hdr.get("kid"), hdr["alg"]
    if kid_config == "jwks":
        with open(os.path.join(KEYS, "jwks.json")) as f:
            ks = jwk.KeySet.import_key_set(json.load(f))
        return ks.get_by_kid(kid), alg
    for k_kid, stem, k_alg in STATIC_ISSUER_KEYS + OTHER_ISSUER_KEYS:
        if k_kid == kid and (kid is not None or k_alg == alg):
            with open(os.path.join(KEYS, stem + ".pub.pem"), "rb") as f:
                return jwk.import_key(f.read()), k_alg
    raise LookupError(kid)


def check_keys():
    problems = []
    for stem in ["rsa", "rsa-pss", "other-rsa", "enc-rsa"]:
        if load_pub(stem).key_size != 2048:
            problems.append(f"{stem} is not RSA-2048")
    if load_pub("rsa-1024").key_size != 1024:
        problems.append("rsa-1024 is not 1024-bit")
    rsa_der = load_pub("rsa").public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    with open(os.path.join(KEYS, "rsa.pub.b64"), "rb") as f:
        b = f.read()
    if b.endswith(b"\n") or base64.b64decode(b, validate=True) != rsa_der:
        problems.append("rsa.pub.b64 mismatch")
    with open(os.path.join(KEYS, "rsa.cert.pem"), "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    if cert.public_key().public_bytes(serialization.Encoding.DER,
                                      serialization.PublicFormat.SubjectPublicKeyInfo) != rsa_der:
        problems.append("rsa.cert.pem key mismatch")
    with open(os.path.join(KEYS, "jwks.json")) as f:
        jwks = json.load(f)
    spki = lambda key: key.public_bytes(serialization.Encoding.DER,  # noqa: E731
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    expect = {"rsa-1": "rsa", "pss-1": "rsa-pss", "ec256-1": "ec256", "ec384-1": "ec384",
              "ec521-1": "ec521", "ed-1": "ed25519", "enc-1": "enc-rsa"}
    for j in jwks["keys"]:
        if j["kid"] in expect and spki(jwk_to_crypto(j)) != spki(load_pub(expect[j["kid"]])):
            problems.append(f"jwks {j['kid']} does not match {expect[j['kid']]}.pub.pem")
    for stem in expect.values():
        with open(os.path.join(PRIV, stem + ".key.pem"), "rb") as f:
            pk = serialization.load_pem_private_key(f.read(), None)
        if spki(pk.public_key()) != spki(load_pub(stem)):
            problems.append(f"private/{stem}.key.pem does not match")
    return problems


def lenient_signer(token):
    """Which key file (if any) produced a valid signature over the token's
    signing input, decoding leniently and taking alg with last-wins semantics.
    Used only to show that a rejected vector has exactly one defect, e.g. that
    duplicate-alg-header really is validly signed with RS256 by rsa."""
    parts = token.split(".")
    if len(parts) != 3:
        return ""

    def lenient(x):
        x = "".join(x.split()).rstrip("=").replace("+", "-").replace("/", "_")
        try:
            return base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
        except Exception:  # noqa: BLE001
            return None
    h, sig = lenient(parts[0]), lenient(parts[2])
    if h is None or sig is None:
        return ""
    try:
        alg = json.loads(h.decode("utf-8", "replace"))["alg"]
    except Exception:  # noqa: BLE001
        alg = "RS256"
    if alg.upper() == "NONE":
        alg = "RS256"
    if alg.upper() in SUPPORTED_ALGS:
        alg = alg.upper()
    si = (parts[0] + "." + parts[1]).encode("latin-1")
    stems = ["rsa", "rsa-pss", "ec256", "ec384", "ec521", "ed25519", "other-rsa", "enc-rsa"]
    for stem in stems:
        if raw_verify(alg, load_pub(stem), si, sig):
            return f"{alg} sig by {stem}"
    return ""


def check():
    with open(os.path.join(OUT, "vectors.json")) as f:
        doc = json.load(f)
    assert doc["now"] == NOW and doc["leewaySeconds"] == LEEWAY
    cfgs = {"static": load_config("static"), "jwks": load_config("jwks")}
    problems = check_keys()
    rows = []
    for v in doc["vectors"]:
        got = reference_verify(v["token"], cfgs[v["kidConfig"]])
        extra = ""
        if got != v["expect"]:
            problems.append(f"{v['name']}: reference verifier says {got}, expected {v['expect']}")
        if v["expect"] == "valid":
            try:
                key, alg = joserfc_key_for(v["token"], v["kidConfig"])
                obj = jws.deserialize_compact(v["token"], key, registry=lax(alg))
                c = json.loads(obj.payload)
                JWTClaimsRegistry(now=NOW, leeway=LEEWAY, exp={"essential": True}).validate(c)
                if c["iss"] == ISSUER and AUDIENCE not in ([c["aud"]] if isinstance(c["aud"], str) else c["aud"]):
                    raise ValueError("aud")
                extra = "joserfc ok"
            except Exception as e:  # noqa: BLE001
                problems.append(f"{v['name']}: joserfc rejects a valid vector: {e!r}")
        elif v["expect"] == "bad_signature":
            try:
                key, alg = joserfc_key_for(v["token"], v["kidConfig"])
                jws.deserialize_compact(v["token"], key, algorithms=[alg])
                problems.append(f"{v['name']}: joserfc ACCEPTS a bad_signature vector")
            except Exception:  # noqa: BLE001
                extra = "joserfc rejects"
        else:
            extra = lenient_signer(v["token"])
        rows.append((v["name"], v["kidConfig"], v["expect"], extra))
    w = max(len(r[0]) for r in rows)
    print(f"{'name':<{w}}  {'config':<6}  {'expect':<22}  cross-check")
    print("-" * (w + 50))
    for r in rows:
        print(f"{r[0]:<{w}}  {r[1]:<6}  {r[2]:<22}  {r[3]}")
    counts = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    print("-" * (w + 50))
    print(f"{len(rows)} vectors: " + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    if problems:
        print("\nSELF-CHECK FAILED:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print("self-check OK (reference verifier agrees on all vectors; joserfc verifies all valid ones)")
    return 0


def generate():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(PRIV)
    keys = gen_keys()
    hmac_secret = write_keys(keys)
    vectors = build_vectors(keys, hmac_secret)
    doc = {"now": NOW, "issuer": ISSUER, "otherIssuer": OTHER_ISSUER, "audience": AUDIENCE,
           "leewaySeconds": LEEWAY, "vectors": vectors}
    write(os.path.join(OUT, "vectors.json"), json.dumps(doc, indent=2) + "\n", "w")
    print(f"wrote {len(vectors)} vectors and keys to {os.path.relpath(OUT, REPO)}")


def add_missing():
    """Appends the extra vectors missing from vectors.json, signed with the committed
    rsa key; every existing key file and vector stays byte for byte."""
    path = os.path.join(OUT, "vectors.json")
    with open(path) as f:
        doc = json.load(f)
    with open(os.path.join(PRIV, "rsa.key.pem"), "rb") as f:
        rsa_k = serialization.load_pem_private_key(f.read(), None)
    present = {v["name"] for v in doc["vectors"]}
    added = [v for v in build_extra_vectors(rsa_k) if v["name"] not in present]
    doc["vectors"].extend(added)
    write(path, json.dumps(doc, indent=2) + "\n", "w")
    print(f"added {len(added)} vectors to {os.path.relpath(path, REPO)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="only self-check the existing fixtures, do not regenerate")
    mode.add_argument("--add-missing", action="store_true",
                      help="keep the committed keys and vectors, append new vectors only")
    args = ap.parse_args()
    if args.add_missing:
        add_missing()
    elif not args.check:
        generate()
    return check()


if __name__ == "__main__":
    sys.exit(main())
