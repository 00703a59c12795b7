#!/usr/bin/env python3
"""Makes a DPoP proof (RFC 9449) for one request, for trying the gateway with curl.

  scripts/dpop-proof.py --key client.jwk --jkt              # makes the key if missing; prints its thumbprint (cnf.jkt)
  scripts/dpop-proof.py --key client.jwk GET URL TOKEN      # prints a fresh proof for GET URL with TOKEN
  scripts/dpop-proof.py --key client.jwk GET URL TOKEN NONCE  # the same with the gateway's DPoP-Nonce (tokens.dpop.nonce)

  curl -H "Authorization: DPoP $TOKEN" -H "DPoP: $(scripts/dpop-proof.py --key client.jwk GET http://127.0.0.1:8080/orders $TOKEN)" \\
       http://127.0.0.1:8080/orders

Needs Python's joserfc (pip install joserfc). ES256 keys; each proof has a new jti and the current iat.
"""
import base64
import hashlib
import json
import os
import sys
import time
import uuid
import warnings

from joserfc import jws
from joserfc.jwk import ECKey, JWKRegistry


def load_key(path):
    if os.path.exists(path):
        with open(path) as handle:
            return JWKRegistry.import_key(json.load(handle))
    key = ECKey.generate_key("P-256")
    with open(path, "w") as handle:
        json.dump(key.as_dict(private=True), handle)
    os.chmod(path, 0o600)
    return key


def main(arguments):
    warnings.simplefilter("ignore")
    if len(arguments) < 3 or arguments[0] != "--key":
        sys.exit(__doc__)
    key = load_key(arguments[1])
    rest = arguments[2:]
    if rest == ["--jkt"]:
        print(key.thumbprint())
        return
    if len(rest) not in (3, 4):
        sys.exit(__doc__)
    method, url, token = rest[:3]
    url = url.split("?", 1)[0].split("#", 1)[0]
    ath = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
    claims = {"htm": method, "htu": url, "iat": int(time.time()), "jti": str(uuid.uuid4()), "ath": ath}
    if len(rest) == 4:
        claims["nonce"] = rest[3]
    header = {"alg": "ES256", "typ": "dpop+jwt", "jwk": key.as_dict(private=False)}
    print(jws.serialize_compact(header, json.dumps(claims).encode(), key, algorithms=["ES256"]))


if __name__ == "__main__":
    main(sys.argv[1:])
