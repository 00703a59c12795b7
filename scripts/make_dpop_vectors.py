#!/usr/bin/env python3
"""Writes Tests/AuthGatewayTests/Fixtures/dpop/vectors.json: DPoP proofs made by joserfc
(through Fixtures/dpop/dpop_proofs.py) for one fixed request, each with the check the gateway
must report ("ok" when it must pass). Fresh keys each run; the unit tests read the file."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "Tests/AuthGatewayTests/Fixtures/dpop"
NOW = 1800000000
HTU = "https://api.example.com/orders/7"
TOKEN = "vector-access-token"

base = {"htm": "GET", "htu": HTU, "iat": NOW, "access_token": TOKEN}
cases = [
    ("ok", {"alg": "ES256", "key": "es"}),
    ("ok", {"alg": "RS256", "key": "rs"}),
    ("ok", {"alg": "PS256", "key": "ps"}),
    ("ok", {"alg": "EdDSA", "key": "ed"}),
    ("ok", {"alg": "ES256", "key": "es", "htu": "HTTPS://API.example.com:443/orders/%37"}),
    ("ok", {"alg": "ES256", "key": "es", "iat": NOW - 64}),
    ("iat", {"alg": "ES256", "key": "es", "iat": NOW - 66}),
    ("iat", {"alg": "ES256", "key": "es", "iat": NOW + 6}),
    ("htm", {"alg": "ES256", "key": "es", "htm": "POST"}),
    ("htu", {"alg": "ES256", "key": "es", "htu": HTU + "?a=1"}),
    ("htu", {"alg": "ES256", "key": "es", "htu": "https://api.example.com/orders/8"}),
    ("ath", {"alg": "ES256", "key": "es", "access_token": "other"}),
    ("typ", {"alg": "ES256", "key": "es", "typ": "jwt"}),
    ("jwk has private members", {"alg": "ES256", "key": "es", "private_jwk": True}),
    ("signature", {"alg": "ES256", "key": "es", "tamper": True}),
    ("alg", {"alg": "ES384", "key": "es384"}),
]
scenarios = [dict(base, **changes) for _, changes in cases]
out = subprocess.run([sys.executable, str(FIXTURES / "dpop_proofs.py")], input=json.dumps(scenarios), capture_output=True, text=True, check=True)
results = json.loads(out.stdout)
vectors = [{"expect": expect, "proof": result["proof"], "jkt": result["jkt"]} for (expect, _), result in zip(cases, results)]
document = {"now": NOW, "htu": HTU, "method": "GET", "accessToken": TOKEN, "maxAgeSeconds": 60, "leewaySeconds": 5, "vectors": vectors}
(FIXTURES / "vectors.json").write_text(json.dumps(document, indent=1) + "\n")
print("wrote", len(vectors), "vectors")
