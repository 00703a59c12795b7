#!/usr/bin/env python3
"""Verifies the gateway's identity assertions as a backend would, with joserfc — an
implementation independent of the gateway's signer.

Reads one JSON document on stdin:
    {"jwks": {...published JWKS...}, "issuer": "...", "now": 1700000000,
     "checks": [{"token": "...", "audience": "...", "typ": "JWT"}, ...]}
and prints one JSON list, one entry per check, in order:
    {"ok": true, "header": {...}, "claims": {...}} or {"ok": false, "error": "..."}
Each token is checked for its signature against the JWKS (key by kid; ES256, RS256, EdDSA),
its header's typ, and its iss, aud and exp (with "now" as the time) — the checks
docs/assertions.md asks a backend to make.
"""
import json
import sys

from joserfc import jwt
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry


def verify(keys, issuer, now, check):
    try:
        token = jwt.decode(check["token"], keys, algorithms=["ES256", "RS256", "EdDSA"])
        if token.header.get("typ") != check["typ"]:
            raise ValueError("typ is %r" % token.header.get("typ"))
        registry = JWTClaimsRegistry(
            now=now, leeway=0,
            iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": check["audience"]},
            exp={"essential": True},
        )
        registry.validate(token.claims)
        return {"ok": True, "header": token.header, "claims": token.claims}
    except Exception as error:  # the test reads the reason
        return {"ok": False, "error": "%s: %s" % (type(error).__name__, error)}


def main():
    document = json.load(sys.stdin)
    keys = KeySet.import_key_set(document["jwks"])
    print(json.dumps([verify(keys, document["issuer"], document["now"], check) for check in document["checks"]]))


if __name__ == "__main__":
    main()
