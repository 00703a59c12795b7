#!/usr/bin/env python3
"""A Shared Signals test transmitter (Python `joserfc`, independent of the gateway's JWS code):
makes Security Event Tokens (RFC 8417) carrying CAEP events, as an OpenID transmitter pushes
them (RFC 8935).

  set_transmitter.py keygen DIR
      makes an RSA key: DIR/private.json (JWK) and DIR/public.pem; prints the public PEM.
  set_transmitter.py sign DIR --iss ISS --aud AUD --event session-revoked|credential-change|
                          token-claims-change [--sid SID] [--sub SUB] [--jti JTI]
                          [--iat-offset SECONDS] [--kid KID] [--typ TYP] [--unsigned]
                          [--key OTHER_DIR]
      prints one SET. The subject is `sub_id`: `opaque` with the sid alone, `iss_sub` with the
      sub alone, `complex` with both. --unsigned: `alg: none` (which the receiver must refuse);
      --key: sign with another key (under the same kid unless --kid says otherwise).
"""
import json
import os
import sys
import time
import uuid

from joserfc import jws
from joserfc.jwk import RSAKey

EVENT_PREFIX = "https://schemas.openid.net/secevent/caep/event-type/"


def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def keygen(directory):
    os.makedirs(directory, exist_ok=True)
    key = RSAKey.generate_key(2048, private=True)
    with open(os.path.join(directory, "private.json"), "w") as handle:
        json.dump(key.as_dict(private=True), handle)
    public = key.as_pem(private=False).decode()
    with open(os.path.join(directory, "public.pem"), "w") as handle:
        handle.write(public)
    print(public, end="")


def sign(directory, options):
    now = time.time() + float(options.get("--iat-offset", "0"))
    sid, sub = options.get("--sid"), options.get("--sub")
    if sid and sub:
        subject = {"format": "complex", "session": {"format": "opaque", "id": sid},
                   "user": {"format": "iss_sub", "iss": options["--iss"], "sub": sub}}
    elif sid:
        subject = {"format": "opaque", "id": sid}
    else:
        subject = {"format": "iss_sub", "iss": options["--iss"], "sub": sub}
    event = options["--event"]
    payload = {"iss": options["--iss"], "aud": options["--aud"], "iat": int(now),
               "jti": options.get("--jti", uuid.uuid4().hex), "sub_id": subject,
               "events": {EVENT_PREFIX + event: {"event_timestamp": int(now)}}}
    header = {"typ": options.get("--typ", "secevent+jwt"), "kid": options.get("--kid", "transmitter")}
    if "--unsigned" in options:
        header["alg"] = "none"
        print(b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload).encode()) + ".")
        return
    header["alg"] = "RS256"
    with open(os.path.join(options.get("--key", directory), "private.json")) as handle:
        key = RSAKey.import_key(json.load(handle))
    print(jws.serialize_compact(header, json.dumps(payload).encode(), key))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "keygen":
        keygen(sys.argv[2])
        return
    if len(sys.argv) >= 3 and sys.argv[1] == "sign":
        arguments = sys.argv[3:]
        options = {}
        index = 0
        while index < len(arguments):
            if arguments[index] == "--unsigned":
                options["--unsigned"] = True
                index += 1
            else:
                options[arguments[index]] = arguments[index + 1]
                index += 2
        sign(sys.argv[2], options)
        return
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
