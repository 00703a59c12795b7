#!/usr/bin/env python3
"""Writes N distinct JWTs (unique jti) signed with the bench keys, one per line, for the
unique-token benchmark: python3 make_tokens.py KEYDIR RS256|ES256 N OUTFILE [--unique-sub]
With --unique-sub each token also has its own `sub` (bench-user-0 …), so that N distinct
rate-limit keys are active."""
import sys, time, uuid
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

keydir, alg, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
unique_sub = "--unique-sub" in sys.argv[5:]
if alg == "RS256":
    key = RSAKey.import_key(open(f"{keydir}/rs256-private.pem", "rb").read())
    kid = "bench-rs256"
else:
    key = ECKey.import_key(open(f"{keydir}/es256-private.pem", "rb").read())
    kid = "bench-es256"
now = int(time.time())
with open(out, "w") as f:
    for index in range(count):
        claims = {"iss": "https://auth.bench.local", "sub": f"bench-user-{index}" if unique_sub else "bench-user-42", "aud": "bench-gateway", "iat": now,
                  "nbf": now - 60, "exp": 4102444800, "jti": str(uuid.uuid4()), "scope": "read:items write:items"}
        f.write(jwt.encode({"alg": alg, "typ": "JWT", "kid": kid}, claims, key) + "\n")
