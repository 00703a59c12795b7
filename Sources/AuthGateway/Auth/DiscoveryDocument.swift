/// What the gateway takes from an OpenID Provider's discovery document (OpenID Connect
/// Discovery 1.0 §3, docs/authentication.md): its key set and, when the configuration leaves them
/// to discovery, the token and userinfo endpoints.
///
/// Validation is strict where trusting the document would move trust: `issuer` must equal the
/// configured issuer exactly (Discovery §4.3, no normalization), every endpoint used must be an
/// absolute `http(s)` URL, and an `https` issuer's endpoints must be `https` too (a cleartext
/// `jwks_uri` would let anyone on the path substitute the signing keys).
struct DiscoveryDocument: Sendable, Equatable {
    let issuer: String
    let jwksURI: UpstreamURL
    let tokenEndpoint: UpstreamURL?
    let userinfoEndpoint: UpstreamURL?
    /// RFC 8414 §2 / RFC 7662: where opaque tokens are introspected.
    var introspectionEndpoint: UpstreamURL? = nil
    /// Where browsers sign in (browser sign-in: docs/browser-sign-in.md).
    var authorizationEndpoint: UpstreamURL? = nil
    /// OpenID Connect RP-Initiated Logout 1.0: where a signed-out browser is sent.
    var endSessionEndpoint: UpstreamURL? = nil

    /// Parses and validates `text` for the issuer `expectedIssuer`; the endpoints named in
    /// `requirements` must be present. Optional endpoints that are absent or unusable are nil.
    static func parse(
        _ text: String, expectedIssuer: String, requirements: DiscoveryConfiguration
    ) throws(DiscoveryError) -> DiscoveryDocument {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text)
        } catch {
            throw DiscoveryError(.notJSON)
        }
        guard case .object(let document) = value else { throw DiscoveryError(.notJSON) }
        guard case .string(let issuer)? = document["issuer"] else { throw DiscoveryError(.missing("issuer")) }
        guard issuer == expectedIssuer else {
            throw DiscoveryError(.issuerMismatch(found: issuer, expected: expectedIssuer))
        }
        let secure = requirements.documentURL.isTLS

        func endpoint(_ name: String, required: Bool) throws(DiscoveryError) -> UpstreamURL? {
            guard let field = document[name] else {
                if required { throw DiscoveryError(.missing(name)) }
                return nil
            }
            guard case .string(let text) = field else {
                if required { throw DiscoveryError(.invalidURL(name, reason: "is not a string")) }
                return nil
            }
            switch UpstreamURL.parse(text) {
            case .success(let url) where secure && !url.isTLS:
                if required {
                    throw DiscoveryError(.invalidURL(name, reason: "\"\(text)\" is not https, but the issuer is"))
                }
                return nil
            case .success(let url):
                return url
            case .failure(let reason):
                if required { throw DiscoveryError(.invalidURL(name, reason: "\"\(text)\" \(reason)")) }
                return nil
            }
        }

        let jwksURI = try endpoint("jwks_uri", required: true)!
        let tokenEndpoint = try endpoint("token_endpoint", required: requirements.needsTokenEndpoint)
        let userinfoEndpoint = try endpoint("userinfo_endpoint", required: requirements.needsUserinfoEndpoint)
        let introspectionEndpoint = try endpoint(
            "introspection_endpoint", required: requirements.needsIntrospectionEndpoint)
        let authorizationEndpoint = try endpoint(
            "authorization_endpoint", required: requirements.needsAuthorizationEndpoint)
        let endSessionEndpoint = try endpoint("end_session_endpoint", required: false)
        return DiscoveryDocument(
            issuer: issuer, jwksURI: jwksURI, tokenEndpoint: tokenEndpoint, userinfoEndpoint: userinfoEndpoint,
            introspectionEndpoint: introspectionEndpoint, authorizationEndpoint: authorizationEndpoint,
            endSessionEndpoint: endSessionEndpoint
        )
    }

    /// Whether this (previously accepted) document still has what `requirements` ask for; a
    /// reason when not (a reload may start relying on an endpoint it lacks).
    func unmet(_ requirements: DiscoveryConfiguration) -> DiscoveryError? {
        if requirements.needsTokenEndpoint && self.tokenEndpoint == nil {
            return DiscoveryError(.missing("token_endpoint"))
        }
        if requirements.needsUserinfoEndpoint && self.userinfoEndpoint == nil {
            return DiscoveryError(.missing("userinfo_endpoint"))
        }
        if requirements.needsIntrospectionEndpoint && self.introspectionEndpoint == nil {
            return DiscoveryError(.missing("introspection_endpoint"))
        }
        if requirements.needsAuthorizationEndpoint && self.authorizationEndpoint == nil {
            return DiscoveryError(.missing("authorization_endpoint"))
        }
        return nil
    }
}

/// Why a discovery document was refused (or could not be fetched); `errorType` is stable, the
/// description goes to `/healthz` and the log.
struct DiscoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    fileprivate enum Kind: Sendable, Equatable {
        case notJSON
        case missing(String)
        case invalidURL(String, reason: String)
        case issuerMismatch(found: String, expected: String)
        case http(Int)
        case unreachable(String)
    }

    fileprivate let kind: Kind

    fileprivate init(_ kind: Kind) { self.kind = kind }

    static func http(status: Int) -> DiscoveryError { DiscoveryError(.http(status)) }
    static func unreachable(_ detail: String) -> DiscoveryError { DiscoveryError(.unreachable(detail)) }

    var errorType: String {
        switch self.kind {
        case .notJSON: return "discovery.not_json"
        case .missing: return "discovery.missing_field"
        case .invalidURL: return "discovery.invalid_url"
        case .issuerMismatch: return "discovery.issuer_mismatch"
        case .http: return "discovery.http_status"
        case .unreachable: return "discovery.unreachable"
        }
    }

    var description: String {
        switch self.kind {
        case .notJSON: return "the discovery document is not a JSON object"
        case .missing(let field): return "the discovery document has no \(field)"
        case .invalidURL(let field, let reason): return "the discovery document's \(field) \(reason)"
        case .issuerMismatch(let found, let expected):
            return "the discovery document's issuer \"\(found)\" is not the configured issuer \"\(expected)\""
        case .http(let status): return "discovery: HTTP \(status)"
        case .unreachable(let detail): return "discovery: fetch failed: \(detail)"
        }
    }
}
