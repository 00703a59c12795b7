#!/usr/bin/env python3
"""Opens rows of the gateway's shared tables with an independent implementation (Python
`cryptography`'s AES-GCM), to show the sealing is the documented one and nothing else.

argv[1]: the 32-byte key, hex. stdin: psql's unaligned rows `<digest hex>|<sealed hex>`.
stdout: one line per row, the plaintext JSON (or `ERROR <reason>`).

Layout (docs/shared-state.md): a format byte 1, then the 12-byte nonce, the
ciphertext and the 16-byte tag; the row's digest is the authenticated data.
"""
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def main():
    aead = AESGCM(bytes.fromhex(sys.argv[1]))
    for line in sys.stdin.read().split():
        digest, sealed = line.split("|")
        data = bytes.fromhex(sealed)
        if data[0] != 1:
            print("ERROR format %d" % data[0])
            continue
        try:
            print(aead.decrypt(data[1:13], data[13:], bytes.fromhex(digest)).decode())
        except Exception as error:  # InvalidTag: wrong key or another row's outcome
            print("ERROR %s" % type(error).__name__)


if __name__ == "__main__":
    main()
