#!/usr/bin/env python3
"""Logout tokens (OpenID Connect Back-Channel Logout 1.0 §2.4) made by an independent
implementation (joserfc + cryptography, and Python's own hmac for the forged HS256), each valid
but for one thing.

Reads one JSON object on stdin:

  {"key_pem": "<the provider's RSA private key, PEM>", "kid": "<its kid>",
   "issuer": "<the provider's issuer>", "client_id": "gateway", "sub": "...", "sid": "...",
   "now": <unix seconds, the gateway's clock>,
   "other_key_pem": "<another configured issuer's RSA private key>", "other_kid": "...",
   "other_issuer": "<that issuer>"}

and prints one JSON object, case name -> compact JWS. "valid" is the control (every check
holds); every other case breaks exactly one check the gateway must make.
"""
import base64
import hashlib
import hmac
import json
import sys
import uuid

from cryptography.hazmat.primitives import serialization
from joserfc import jwt
from joserfc.jwk import RSAKey

EVENT = "http://schemas.openid.net/event/backchannel-logout"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segment(value):
    return b64url(json.dumps(value, separators=(",", ":")).encode())


def main():
    spec = json.load(sys.stdin)
    key = RSAKey.import_key(spec["key_pem"])
    other = RSAKey.import_key(spec["other_key_pem"])
    now = int(spec["now"])
    header = {"alg": "RS256", "kid": spec["kid"], "typ": "logout+jwt"}

    def claims(**changes):
        base = {
            "iss": spec["issuer"], "aud": spec["client_id"], "iat": now, "exp": now + 120,
            "jti": str(uuid.uuid4()), "events": {EVENT: {}}, "sid": spec["sid"], "sub": spec["sub"],
        }
        for name, value in changes.items():
            if value is None:
                base.pop(name, None)
            else:
                base[name] = value
        return base

    def signed(body, head=None, signer=key):
        return jwt.encode(head or header, body, signer)

    tokens = {"valid": signed(claims())}

    # A signature that does not verify: one byte of the signature changed.
    good = signed(claims())
    head_payload, signature = good.rsplit(".", 1)
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[len(raw) // 2] ^= 0x01
    tokens["bad_signature"] = head_payload + "." + b64url(bytes(raw))

    # `alg: none`, no signature.
    tokens["alg_none"] = segment({"alg": "none", "typ": "logout+jwt"}) + "." + segment(claims()) + "."

    # HS256 keyed with the issuer's public key as the HMAC secret (the classic key confusion),
    # in its PEM and its DER form.
    public = key.get_op_key("verify")
    for name, secret in (
        ("hs256_public_pem", public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)),
        ("hs256_public_der", public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)),
    ):
        signing_input = segment({"alg": "HS256", "kid": spec["kid"], "typ": "logout+jwt"}) + "." + segment(claims())
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        tokens[name] = signing_input + "." + b64url(mac)

    # Another configured issuer, signing with its own key: valid for it, not for sign-in.
    tokens["other_issuer"] = signed(
        claims(iss=spec["other_issuer"]), {"alg": "RS256", "kid": spec["other_kid"], "typ": "logout+jwt"}, other)
    # The provider's key, but another issuer named.
    tokens["other_issuer_claim"] = signed(claims(iss=spec["other_issuer"]))
    tokens["nonce"] = signed(claims(nonce="n-0S6_WzA2Mj"))
    tokens["events_missing"] = signed(claims(events=None))
    tokens["events_other_member"] = signed(claims(events={"http://schemas.openid.net/event/other": {}}))
    tokens["events_not_object"] = signed(claims(events=EVENT))
    tokens["events_array"] = signed(claims(events=[EVENT]))
    tokens["events_member_not_object"] = signed(claims(events={EVENT: "true"}))
    tokens["events_member_true"] = signed(claims(events={EVENT: True}))
    tokens["no_sid_no_sub"] = signed(claims(sid=None, sub=None))
    tokens["iat_too_old"] = signed(claims(iat=now - 400, exp=now + 120))
    tokens["iat_future"] = signed(claims(iat=now + 120, exp=now + 240))
    tokens["iat_missing"] = signed(claims(iat=None))
    tokens["expired"] = signed(claims(iat=now - 60, exp=now - 30))
    tokens["no_jti"] = signed(claims(jti=None))
    tokens["empty_jti"] = signed(claims(jti=""))
    tokens["wrong_aud"] = signed(claims(aud="another-client"))
    tokens["aud_list_without_client"] = signed(claims(aud=["another-client", "api"]))
    tokens["wrong_typ"] = signed(claims(), {"alg": "RS256", "kid": spec["kid"], "typ": "at+jwt"})
    print(json.dumps(tokens))


if __name__ == "__main__":
    main()
