#!/usr/bin/env python3
"""DPoP proofs (RFC 9449) made by an independent implementation (joserfc + cryptography).

Reads a JSON array of scenarios on stdin and prints a JSON array of results, one per scenario:

  scenario: {"alg": "ES256"|"RS256"|"PS256"|"EdDSA"|"ES384", "key": "<name>" (same name = same key
             within one run), "htm": "GET", "htu": "http://host/path", "iat": <unix seconds>,
             "jti": "...", "access_token": "<token for ath>" (omit: no ath), "ath": "<override>",
             "typ": "dpop+jwt", "private_jwk": true (leak private members), "nonce": "...",
             "omit": ["htm", ...], "tamper": true (break the signature),
             "use_jwk": {<a private JWK from an earlier result: sign with that key>}}
  result:   {"proof": "<compact JWS>", "jkt": "<RFC 7638 thumbprint of the key>",
             "private_jwk": {<the key, to pass back as use_jwk>}}

`scripts/make_dpop_vectors.py`-style committed vectors and the live integration tests both use it.
"""
import base64
import warnings
import hashlib
import json
import sys
import uuid

from joserfc import jws
from joserfc.jwk import ECKey, JWKRegistry, OKPKey, RSAKey

CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_key(alg):
    if alg in CURVES:
        return ECKey.generate_key(CURVES[alg])
    if alg in ("RS256", "PS256", "RS384", "PS384"):
        return RSAKey.generate_key(2048)
    if alg == "EdDSA":
        return OKPKey.generate_key("Ed25519")
    raise SystemExit("unsupported alg " + alg)


def main():
    warnings.simplefilter("ignore")
    scenarios = json.load(sys.stdin)
    keys = {}
    results = []
    for scenario in scenarios:
        alg = scenario.get("alg", "ES256")
        name = scenario.get("key", alg)
        if "use_jwk" in scenario:
            keys[name] = JWKRegistry.import_key(scenario["use_jwk"])
        if name not in keys:
            keys[name] = make_key(alg)
        key = keys[name]
        jwk = key.as_dict(private=bool(scenario.get("private_jwk")))
        header = {"alg": alg, "typ": scenario.get("typ", "dpop+jwt"), "jwk": jwk}
        claims = {"htm": scenario.get("htm", "GET"), "htu": scenario["htu"], "iat": scenario["iat"], "jti": scenario.get("jti", str(uuid.uuid4()))}
        if "access_token" in scenario:
            claims["ath"] = b64url(hashlib.sha256(scenario["access_token"].encode()).digest())
        if "ath" in scenario:
            claims["ath"] = scenario["ath"]
        if "nonce" in scenario:
            claims["nonce"] = scenario["nonce"]
        for member in scenario.get("omit", []):
            claims.pop(member, None)
        proof = jws.serialize_compact(header, json.dumps(claims).encode(), key, algorithms=[alg])
        if scenario.get("tamper"):
            head, payload, signature = proof.split(".")
            raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
            raw[len(raw) // 2] ^= 0x01
            proof = ".".join([head, payload, b64url(bytes(raw))])
        results.append({"proof": proof, "jkt": key.thumbprint(), "private_jwk": key.as_dict(private=True)})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
