/// A Security Event Token (RFC 8417) that passed every check (`SecurityEventCheck`), as the
/// receiver acts on it (docs/streams.md, "Shared Signals").
struct SecurityEvent: Sendable, Equatable {
    /// The CAEP events the gateway acts on (OpenID Continuous Access Evaluation Profile 1.0).
    enum Kind: String, Sendable, CaseIterable {
        case sessionRevoked = "session-revoked"
        case credentialChange = "credential-change"
        case tokenClaimsChange = "token-claims-change"

        static let uriPrefix = "https://schemas.openid.net/secevent/caep/event-type/"

        var uri: String { Self.uriPrefix + self.rawValue }
        /// The `event` label of `auth_gateway_signals_total`.
        var label: String { self.rawValue.replacingOccurrences(of: "-", with: "_") }
    }

    /// Whom the event is about (RFC 9493 subject identifiers): a provider session (`opaque`,
    /// or a `complex` subject's `session`), a user (`iss_sub`, or a `complex` subject's
    /// `user`), or both.
    struct Subject: Sendable, Equatable {
        var providerSessionID: String?
        var subject: String?
    }

    let kind: Kind
    let subject: Subject
    let jti: String
    let issuedAt: Double
}

/// Why a SET was refused: the RFC 8935 §2.4 error code and a description that names the
/// failed check, never a value from the token.
struct SecurityEventRefusal: Error, Sendable, Equatable {
    enum Code: String, Sendable {
        case invalidRequest = "invalid_request"
        case invalidKey = "invalid_key"
        case authenticationFailed = "authentication_failed"
        case invalidIssuer = "invalid_issuer"
        case invalidAudience = "invalid_audience"
    }

    let code: Code
    let description: String

    init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    /// The answer's body: `{"err": …, "description": …}` (RFC 8935 §2.3).
    var json: JSONValue {
        .object(["err": .string(self.code.rawValue), "description": .string(self.description)])
    }
}
