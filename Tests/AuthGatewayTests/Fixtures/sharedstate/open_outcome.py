#!/usr/bin/env python3
"""Opens a refresh outcome the gateway sealed in its shared table (docs/shared-state.md) with an
implementation independent of the gateway's swift-crypto: Python `cryptography`'s AESGCM.

  open_outcome.py KEY_BASE64 OLD_REFRESH_TOKEN DIGEST_HEX SEALED_HEX

KEY_BASE64 is `sharedState.encryptionKeyBase64` as configured: its 32 bytes are the AES-256 key
(no derivation). DIGEST_HEX and SEALED_HEX are the row's `token_digest` and `sealed_outcome`.
The layout read here is the one `OutcomeSealer` documents: a format byte (1), then AES-GCM's
combined form (12-byte nonce, ciphertext, 16-byte tag); the row's token digest (SHA-256 of the
old refresh token) is the authenticated data.

Prints one JSON line: {"digestMatches": bool, "outcome": {...} or null, "error": str or null,
"openedUnderAnotherDigest": bool}. Never prints the key.
"""
import base64
import hashlib
import json
import sys

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def main(key_base64, refresh_token, digest_hex, sealed_hex):
    key = base64.b64decode(key_base64)
    digest = bytes.fromhex(digest_hex)
    sealed = bytes.fromhex(sealed_hex)
    result = {
        "digestMatches": hashlib.sha256(refresh_token.encode("utf-8")).digest() == digest,
        "outcome": None,
        "error": None,
        "openedUnderAnotherDigest": False,
    }
    if len(key) != 32:
        result["error"] = "key is %d bytes, not 32" % len(key)
    elif len(sealed) < 1 + 12 + 16 or sealed[0] != 1:
        result["error"] = "unknown layout (format byte %r, %d bytes)" % (sealed[:1], len(sealed))
    else:
        nonce, box = sealed[1:13], sealed[13:]
        aead = AESGCM(key)
        try:
            result["outcome"] = json.loads(aead.decrypt(nonce, box, digest).decode("utf-8"))
        except InvalidTag:
            result["error"] = "authentication failed"
        # The digest is bound as authenticated data: another row's digest must not open it.
        try:
            aead.decrypt(nonce, box, hashlib.sha256(b"another refresh token").digest())
            result["openedUnderAnotherDigest"] = True
        except InvalidTag:
            pass
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
