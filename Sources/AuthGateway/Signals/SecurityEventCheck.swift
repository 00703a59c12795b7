/// Checks a pushed Security Event Token (RFC 8935 push delivery of an RFC 8417 SET) before the
/// gateway acts on it (docs/streams.md, "Shared Signals"). Pure: the keys, the configuration
/// and `now` are passed in; the `jti` replay check is the receiver's.
///
/// In order: the JWS parses with a supported algorithm (never `none`) → `iss` is the
/// configured issuer, one of `tokens.issuers` → the key (by `kid`, pinned to its algorithm)
/// verifies the signature → `typ` is `secevent+jwt` → `aud` holds the audience → `iat` is
/// neither older than `maxAgeSeconds` nor in the future (the issuer's leeway on both), `exp`
/// (rare in a SET) not passed → a `jti` → `events` names a CAEP event the gateway acts on →
/// its subject is one the gateway can act on. The first failure refuses the SET with its
/// RFC 8935 error code, and nothing is ended.
enum SecurityEventCheck {
    static let maximumJTILength = 256

    static func check(
        _ token: String, keys: KeySnapshot, configuration: SignalsConfiguration, now: Double
    ) -> Result<SecurityEvent, SecurityEventRefusal> {
        var token = token
        let signed = token.withUTF8 { TokenVerifier.signedClaims(token: UnsafeRawBufferPointer($0), keys: keys) }
        let claims: JSONObject
        let header: JSONObject
        let leeway: Double
        switch signed {
        case .failure(let rejection):
            return .failure(Self.refusal(rejection.failure))
        case .success(let (payload, protected, issuerIndex)):
            guard keys.issuers[issuerIndex].issuer == configuration.issuer else {
                return .failure(
                    SecurityEventRefusal(.invalidIssuer, "The SET's issuer is not the configured transmitter"))
            }
            (claims, header, leeway) = (payload, protected, Double(keys.issuers[issuerIndex].leewaySeconds))
        }
        guard case .string(let type)? = header["typ"],
            ASCII.equalsIgnoringCase(type, "secevent+jwt") || ASCII.equalsIgnoringCase(type, "application/secevent+jwt")
        else { return .failure(SecurityEventRefusal(.invalidRequest, "The SET's typ is not secevent+jwt")) }
        guard Self.audience(claims["aud"], contains: configuration.audience) else {
            return .failure(SecurityEventRefusal(.invalidAudience, "The SET is not addressed to this receiver"))
        }
        guard case .number(let iat)? = claims["iat"] else {
            return .failure(SecurityEventRefusal(.invalidRequest, "The SET has no iat"))
        }
        guard iat.double <= now + leeway else {
            return .failure(SecurityEventRefusal(.invalidRequest, "The SET was issued in the future"))
        }
        guard now - iat.double <= Double(configuration.maxAgeSeconds) + leeway else {
            return .failure(SecurityEventRefusal(.invalidRequest, "The SET is too old"))
        }
        if let exp = claims["exp"] {
            guard case .number(let value) = exp, now < value.double + leeway else {
                return .failure(SecurityEventRefusal(.invalidRequest, "The SET has expired"))
            }
        }
        guard case .string(let jti)? = claims["jti"], !jti.isEmpty, jti.utf8.count <= Self.maximumJTILength else {
            return .failure(SecurityEventRefusal(.invalidRequest, "The SET has no usable jti"))
        }
        guard case .object(let events)? = claims["events"] else {
            return .failure(SecurityEventRefusal(.invalidRequest, "The SET has no events"))
        }
        let known = SecurityEvent.Kind.allCases.filter { events[$0.uri] != nil }
        guard known.count == 1, let kind = known.first, case .object(let payload)? = events[kind.uri] else {
            return .failure(
                SecurityEventRefusal(
                    .invalidRequest,
                    "The SET carries no single session-revoked, credential-change or token-claims-change event"))
        }
        // SSF puts the subject beside the events (`sub_id`); earlier CAEP drafts in the event.
        guard case .object(let identifier)? = claims["sub_id"] ?? payload["subject"],
            let subject = Self.subject(identifier, for: kind)
        else {
            return .failure(
                SecurityEventRefusal(.invalidRequest, "The SET's subject is missing or of an unsupported format"))
        }
        return .success(SecurityEvent(kind: kind, subject: subject, jti: jti, issuedAt: iat.double))
    }

    /// The subject an RFC 9493 identifier names, as `kind` needs it: a session (or every
    /// session of a user) for `session-revoked`, a user for the others. `opaque` names the
    /// provider session of a `session-revoked`, and the user of the other events.
    static func subject(_ identifier: JSONObject, for kind: SecurityEvent.Kind) -> SecurityEvent.Subject? {
        var subject = SecurityEvent.Subject()
        switch identifier["format"]?.stringValue {
        case "opaque":
            guard let id = Self.nonEmpty(identifier["id"]) else { return nil }
            if kind == .sessionRevoked { subject.providerSessionID = id } else { subject.subject = id }
        case "iss_sub":
            guard Self.nonEmpty(identifier["iss"]) != nil, let sub = Self.nonEmpty(identifier["sub"]) else {
                return nil
            }
            subject.subject = sub
        case "complex":
            if case .object(let session)? = identifier["session"], session["format"]?.stringValue == "opaque" {
                subject.providerSessionID = Self.nonEmpty(session["id"])
            }
            if case .object(let user)? = identifier["user"] {
                switch user["format"]?.stringValue {
                case "iss_sub": subject.subject = Self.nonEmpty(user["sub"])
                case "opaque": subject.subject = Self.nonEmpty(user["id"])
                default: break
                }
            }
        default:
            return nil
        }
        switch kind {
        case .sessionRevoked:
            guard subject.providerSessionID != nil || subject.subject != nil else { return nil }
        case .credentialChange, .tokenClaimsChange:
            guard subject.subject != nil else { return nil }
            subject.providerSessionID = nil
        }
        return subject
    }

    private static func refusal(_ failure: TokenFailure) -> SecurityEventRefusal {
        switch failure {
        case .wrongIssuer:
            return SecurityEventRefusal(.invalidIssuer, "The SET's issuer is not the configured transmitter")
        case .unknownKey, .algorithmMismatch:
            return SecurityEventRefusal(.invalidKey, "The SET is signed with a key the receiver does not know")
        case .badSignature, .unsupportedAlgorithm:
            return SecurityEventRefusal(.authenticationFailed, "The SET's signature does not verify")
        default:
            return SecurityEventRefusal(.invalidRequest, "The SET is not a well-formed signed JWT")
        }
    }

    private static func audience(_ value: JSONValue?, contains audience: String) -> Bool {
        switch value {
        case .string(let text)?: return text == audience
        case .array(let values)?: return values.contains(.string(audience))
        default: return false
        }
    }

    private static func nonEmpty(_ value: JSONValue?) -> String? {
        guard case .string(let text)? = value, !text.isEmpty else { return nil }
        return text
    }
}
