#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A JWS in compact serialization (RFC 7515 §7.1), split and decoded but not yet trusted.
struct CompactJWS {
    /// The `alg` header, verbatim.
    let algorithm: String
    /// The whole protected header (DPoP proofs carry their `typ` and `jwk` there).
    let header: JSONObject
    let keyID: String?
    let payload: JSONObject
    let signature: [UInt8]
    /// Byte count of `header.payload`, the signing input at the start of the token.
    let signingInputLength: Int

    /// Header parameters whose meaning the gateway understands; anything else listed in `crit`
    /// makes the token unacceptable (RFC 7515 §4.1.11). None of these may appear in `crit`
    /// either, since registered names are not extensions.
    private static let understoodCriticalHeaders: Set<String> = []

    /// Parses `token`. Checks, in order: shape and encoding, a supported `alg`, `crit`, a JSON
    /// object payload. Keys named in the header (`jwk`, `jku`, `x5u`, `x5c`) are ignored: keys
    /// come from configuration only.
    static func parse(_ token: UnsafeRawBufferPointer) throws(TokenFailure) -> CompactJWS {
        guard let firstDot = Self.dot(in: token, from: 0) else { throw .malformed }
        let afterFirst = firstDot + 1
        guard let secondDot = Self.dot(in: token, from: afterFirst) else { throw .malformed }
        let afterSecond = secondDot + 1
        // A third dot means JWE or garbage.
        guard Self.dot(in: token, from: afterSecond) == nil else { throw .malformed }
        guard firstDot > 0, secondDot > afterFirst else { throw .malformed }

        guard let headerBytes = Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[..<firstDot])),
            let header = try? JSONValue(parsingBytes: headerBytes).objectValue
        else { throw .malformed }

        guard case .string(let algorithm)? = header["alg"] else { throw .malformed }
        guard JWSAlgorithm(rawValue: algorithm) != nil else { throw .unsupportedAlgorithm }

        var keyID: String?
        if let kid = header["kid"] {
            guard case .string(let value) = kid else { throw .malformed }
            keyID = value
        }

        if let critical = header["crit"] {
            guard case .array(let names) = critical, !names.isEmpty else { throw .criticalHeader }
            for name in names {
                guard case .string(let text) = name, Self.understoodCriticalHeaders.contains(text) else {
                    throw .criticalHeader
                }
            }
        }

        guard let payloadBytes = Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[afterFirst..<secondDot])),
            let payload = try? JSONValue(parsingBytes: payloadBytes).objectValue
        else { throw .malformed }

        guard let signature = Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[afterSecond...])) else {
            throw .malformed
        }
        return CompactJWS(
            algorithm: algorithm, header: header, keyID: keyID, payload: payload, signature: signature,
            signingInputLength: secondDot)
    }

    /// The offset of the first "." at or after `start` (memchr: the generic
    /// `firstIndex(of:)` showed in the profile of unique tokens).
    private static func dot(in token: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < token.count, let base = token.baseAddress else { return nil }
        guard let found = memchr(base + start, Int32(UInt8(ascii: ".")), token.count - start) else { return nil }
        return UnsafeRawPointer(found) - base
    }
}

extension CompactJWS {
    /// The payload of a token the gateway verified itself before it stored it (a session's
    /// access token, a refresh's new one), read again without checking anything: nil when it
    /// is no compact JWS (an opaque token). Never for a token a client just sent.
    static func storedPayload(_ token: Substring) -> JSONObject? {
        var token = token
        return token.withUTF8 { bytes in (try? CompactJWS.parse(UnsafeRawBufferPointer(bytes)))?.payload }
    }
}
