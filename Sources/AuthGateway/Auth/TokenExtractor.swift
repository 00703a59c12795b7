import NIOHTTP1

public struct ExtractedToken: Sendable, Equatable {
    public var value: Substring
    public var location: TokenLocation
    /// It came as `Authorization: DPoP <token>` (RFC 9449 §7.1).
    public var dpopScheme = false
}

/// Finds the token in a request according to the configured sources (docs/authentication.md).
enum TokenExtractor {
    enum Result: Equatable {
        case none
        case found(ExtractedToken)
        /// Two different tokens: the request is ambiguous (400 invalid_request).
        case conflict
    }

    static func extract(from headers: HTTPHeaders, sources: [TokenSourceConfiguration]) -> Result {
        var found: ExtractedToken?
        for source in sources {
            switch source {
            case .header(let name, let bearer, let raw):
                // The DPoP scheme is accepted on `Authorization` whatever its schemes (docs/authentication.md).
                let acceptsDPoP = ASCII.equalsIgnoringCase(name, "authorization")
                for (headerName, value) in headers where ASCII.equalsIgnoringCase(headerName, name) {
                    if acceptsDPoP, let token = Self.dpopToken(inHeaderValue: value[...]) {
                        if let found, found.value != token { return .conflict }
                        if found == nil {
                            found = ExtractedToken(
                                value: token, location: .header(name: name, bearer: true), dpopScheme: true)
                        }
                        continue
                    }
                    guard let candidate = Self.token(inHeaderValue: value[...], bearer: bearer, raw: raw) else {
                        continue
                    }
                    if let found, found.value != candidate.value { return .conflict }
                    if found == nil {
                        found = ExtractedToken(
                            value: candidate.value, location: .header(name: name, bearer: candidate.bearer))
                    }
                }
            case .cookie(let name):
                for (headerName, value) in headers where ASCII.equalsIgnoringCase(headerName, "cookie") {
                    for cookie in CookieHeader.pairs(in: value) where ASCII.bytesEqual(cookie.name, name) {
                        guard !cookie.value.isEmpty else { continue }
                        if let found, found.value != cookie.value { return .conflict }
                        if found == nil { found = ExtractedToken(value: cookie.value, location: .cookie(name: name)) }
                    }
                }
            case .websocketProtocol(let prefix):
                for (headerName, value) in headers where ASCII.equalsIgnoringCase(headerName, "sec-websocket-protocol")
                {
                    for entry in value.split(separator: ",") {
                        let trimmed = ASCII.trimmingOWS(entry)
                        guard trimmed.hasPrefix(prefix) else { continue }
                        // An entry that does not decode is no token (the request is then without one).
                        guard let bytes = Base64URL.decode(trimmed.dropFirst(prefix.count)), !bytes.isEmpty,
                            let token = String(validating: bytes, as: UTF8.self)
                        else { continue }
                        if let found, found.value != token[...] { return .conflict }
                        if found == nil {
                            found = ExtractedToken(value: token[...], location: .websocketProtocol(prefix: prefix))
                        }
                    }
                }
            }
        }
        return found.map(Result.found) ?? .none
    }

    /// `DPoP <token>` (scheme case-insensitive, RFC 9449 §7.1); nil for any other value.
    static func dpopToken(inHeaderValue value: Substring) -> Substring? {
        let trimmed = ASCII.trimmingOWS(value)
        guard ASCII.hasPrefixIgnoringCase(trimmed, "dpop ") else { return nil }
        let token = ASCII.trimmingOWS(trimmed.dropFirst(5))
        return token.isEmpty ? nil : token
    }

    /// `Bearer <token>` (scheme case-insensitive, RFC 6750 §2.1) or a bare token (`raw`).
    /// Other schemes (`Basic …`) are not tokens for the gateway.
    static func token(inHeaderValue value: Substring, bearer: Bool, raw: Bool) -> (value: Substring, bearer: Bool)? {
        let trimmed = ASCII.trimmingOWS(value)
        guard !trimmed.isEmpty else { return nil }
        if bearer, ASCII.hasPrefixIgnoringCase(trimmed, "bearer ") {
            let token = ASCII.trimmingOWS(trimmed.dropFirst(7))
            return token.isEmpty ? nil : (token, true)
        }
        if raw, !trimmed.utf8.contains(UInt8(ascii: " ")), !ASCII.equalsIgnoringCase(trimmed, "bearer") {
            return (trimmed, false)
        }
        return nil
    }
}
