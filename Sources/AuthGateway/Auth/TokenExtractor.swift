import NIOHTTP1

/// Where a token was found, so a replacement can be put back in the same place.
public enum TokenLocation: Sendable, Equatable {
    /// A header; `bearer` tells whether the value had the `Bearer ` scheme.
    case header(name: String, bearer: Bool)
    case cookie(name: String)
    /// The access token of the browser session under this handle digest
    /// (docs/browser-sign-in.md): forwarded as `Authorization: Bearer`, never as the cookie.
    case session(TokenDigest)
}

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
                    for cookie in CookieHeader.pairs(in: value) where cookie.name == name {
                        guard !cookie.value.isEmpty else { continue }
                        if let found, found.value != cookie.value { return .conflict }
                        if found == nil { found = ExtractedToken(value: cookie.value, location: .cookie(name: name)) }
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

/// Parses `Cookie` header values (RFC 6265 §5.4 shape: `a=1; b=2`). On the request path of every
/// session request (token extraction, the session handle, the upstream rewrite): it scans the
/// value's bytes and allocates nothing until something is rewritten.
enum CookieHeader {
    /// The `name=value` pairs of one `Cookie` value, in order, names and values trimmed and a
    /// quoted value unquoted; parts without `=` are skipped.
    static func pairs(in header: String) -> Pairs { Pairs(header: header) }

    struct Pairs: Sequence {
        let header: String

        struct Iterator: IteratorProtocol {
            let header: String
            var position: String.Index

            mutating func next() -> (name: Substring, value: Substring)? {
                let utf8 = self.header.utf8
                while self.position < utf8.endIndex {
                    let end = utf8[self.position...].firstIndex(of: UInt8(ascii: ";")) ?? utf8.endIndex
                    let part = self.header[self.position..<end]
                    self.position = end < utf8.endIndex ? utf8.index(after: end) : end
                    guard let equals = part.utf8.firstIndex(of: UInt8(ascii: "=")) else { continue }
                    let name = ASCII.trimmingOWS(part[..<equals])
                    var value = ASCII.trimmingOWS(part[part.utf8.index(after: equals)...])
                    if value.utf8.count >= 2, value.utf8.first == UInt8(ascii: "\""),
                        value.utf8.last == UInt8(ascii: "\"")
                    {
                        value = value.dropFirst().dropLast()
                    }
                    return (name, value)
                }
                return nil
            }
        }

        func makeIterator() -> Iterator { Iterator(header: self.header, position: self.header.startIndex) }
    }

    /// The `Cookie` value without cookie `name` and the cookies whose names start with `prefix`
    /// (nil when nothing is left); the value itself when it has neither.
    static func removing(_ header: String, name: String, prefix: String) -> String? {
        guard header.contains(name) || header.contains(prefix) else { return header }
        return Self.rebuilt(header) { cookieName, _ in
            cookieName == name || cookieName.hasPrefix(prefix) ? .drop : .keep
        }
    }

    /// The `Cookie` value with cookie `name` removed (nil when nothing is left) or, with
    /// `replacement`, its value replaced.
    static func rewrite(_ header: String, name: String, replacement: String?) -> String? {
        Self.rebuilt(header) { cookieName, hasValue in
            guard hasValue, cookieName == name else { return .keep }
            return replacement.map { .replace("\(name)=\($0)") } ?? .drop
        }
    }

    private enum PartFate {
        case keep
        case drop
        case replace(String)
    }

    /// The parts of `header` (trimmed, empty ones left out) as `fate` decides by cookie name
    /// (the whole part when it has no `=`, with `hasValue` false), in one string; nil when
    /// nothing is left.
    private static func rebuilt(_ header: String, fate: (_ name: Substring, _ hasValue: Bool) -> PartFate) -> String? {
        var result = ""
        result.reserveCapacity(header.utf8.count)
        let utf8 = header.utf8
        var position = utf8.startIndex
        while position < utf8.endIndex {
            let end = utf8[position...].firstIndex(of: UInt8(ascii: ";")) ?? utf8.endIndex
            let part = ASCII.trimmingOWS(header[position..<end])
            position = end < utf8.endIndex ? utf8.index(after: end) : end
            guard !part.isEmpty else { continue }
            let equals = part.utf8.firstIndex(of: UInt8(ascii: "="))
            let kept: Substring
            switch fate(equals.map { ASCII.trimmingOWS(part[..<$0]) } ?? part, equals != nil) {
            case .keep: kept = part
            case .drop: continue
            case .replace(let replacement): kept = replacement[...]
            }
            if !result.isEmpty { result += "; " }
            result += kept
        }
        return result.isEmpty ? nil : result
    }
}
