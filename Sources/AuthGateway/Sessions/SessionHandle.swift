import Crypto

/// What a session cookie holds (docs/browser-sign-in.md): 256 random bits, base64url without
/// padding (43 characters), and nothing else. The gateway keeps the session's record under the
/// handle's SHA-256 (`digest`), never under the handle itself, so a read of the session table
/// (or of a memory dump's keys) yields no usable cookie.
struct SessionHandle: Sendable, Equatable {
    /// A request's handle is a slice of its `Cookie` value: read on every session request, it is
    /// neither copied nor allocated.
    let value: Substring

    /// A fresh handle from the system's cryptographic random source.
    static func generate() -> SessionHandle {
        SessionHandle(value: Base64URL.encode(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })[...])
    }

    /// The cookie's value as sent, when it has a handle's shape (43 base64url characters).
    init?(cookieValue: Substring) {
        let utf8 = cookieValue.utf8
        guard utf8.count == 43,
            utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(Base64URL.isAlphabetByte) })
                ?? utf8.allSatisfy(Base64URL.isAlphabetByte)
        else { return nil }
        self.value = cookieValue
    }

    private init(value: Substring) { self.value = value }

    var digest: TokenDigest { TokenDigest(of: self.value) }
}
