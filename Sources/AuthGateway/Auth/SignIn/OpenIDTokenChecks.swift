/// The claims of an ID token that passed every check (OpenID Connect Core 1.0 §3.1.3.7).
struct IDToken: Sendable, Equatable {
    let subject: String
    /// `sid`: the provider's session, for back-channel logout.
    let providerSessionID: String?
    let expiresAt: Double
}

/// What a logout token says (OpenID Connect Back-Channel Logout 1.0 §2.4).
struct LogoutToken: Sendable, Equatable {
    let providerSessionID: String?
    let subject: String?
    let jti: String
    let issuedAt: Double
}

/// Checks the two JWTs a provider sends a relying party: the ID token of a sign-in and the
/// logout token of a back-channel logout (docs/browser-sign-in.md). Both are signed by the
/// issuer's keys (the same snapshot that verifies access tokens); their claims follow their
/// own rules, not an access token's (`aud` is the client id, not the API's audience).
enum OpenIDTokenChecks {
    /// Why a token was refused; names a check, never a value.
    enum Failure: String, Error, Sendable, Equatable {
        case signature, issuer, audience, authorizedParty, expired, issuedAt, nonce, subject, malformed
        case events, jti, type
    }

    static let backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"
    /// How old a logout token's `iat` may be (plus the issuer's leeway).
    static let logoutTokenMaxAgeSeconds = 300.0

    static func idToken(
        _ token: String, keys: KeySnapshot, issuer: String, clientID: String, nonce: String, now: Double
    ) -> Result<IDToken, Failure> {
        let (claims, _, leeway): (JSONObject, JSONObject, Double)
        switch Self.signed(token, keys: keys, issuer: issuer) {
        case .failure(let failure): return .failure(failure)
        case .success(let signed): (claims, _, leeway) = signed
        }
        guard Self.audience(claims["aud"], contains: clientID) else { return .failure(.audience) }
        if let azp = claims["azp"], azp != .string(clientID) { return .failure(.authorizedParty) }
        guard case .number(let exp)? = claims["exp"] else { return .failure(.malformed) }
        guard now < exp.double + leeway else { return .failure(.expired) }
        guard case .number(let iat)? = claims["iat"] else { return .failure(.malformed) }
        guard iat.double <= now + leeway else { return .failure(.issuedAt) }
        guard claims["nonce"] == .string(nonce) else { return .failure(.nonce) }
        guard case .string(let subject)? = claims["sub"], !subject.isEmpty else { return .failure(.subject) }
        var sid: String?
        if let value = claims["sid"] {
            guard case .string(let text) = value else { return .failure(.malformed) }
            sid = text
        }
        return .success(IDToken(subject: subject, providerSessionID: sid, expiresAt: exp.double))
    }

    static func logoutToken(
        _ token: String, keys: KeySnapshot, issuer: String, clientID: String, now: Double
    ) -> Result<LogoutToken, Failure> {
        let (claims, header, leeway): (JSONObject, JSONObject, Double)
        switch Self.signed(token, keys: keys, issuer: issuer) {
        case .failure(let failure): return .failure(failure)
        case .success(let signed): (claims, header, leeway) = signed
        }
        // Explicit typing (§2.4) keeps another kind of JWT from passing as a logout token.
        if let type = header["typ"] {
            guard case .string(let text) = type,
                ASCII.equalsIgnoringCase(text, "logout+jwt") || ASCII.equalsIgnoringCase(text, "application/logout+jwt")
                    || ASCII.equalsIgnoringCase(text, "JWT")
            else { return .failure(.type) }
        }
        guard Self.audience(claims["aud"], contains: clientID) else { return .failure(.audience) }
        guard case .number(let iat)? = claims["iat"] else { return .failure(.malformed) }
        guard iat.double <= now + leeway else { return .failure(.issuedAt) }
        guard now - iat.double <= Self.logoutTokenMaxAgeSeconds + leeway else { return .failure(.issuedAt) }
        if let exp = claims["exp"] {
            guard case .number(let value) = exp else { return .failure(.malformed) }
            guard now < value.double + leeway else { return .failure(.expired) }
        }
        // §2.4: the member's value is a JSON object (usually `{}`); another value is not this event.
        guard case .object(let events)? = claims["events"], case .object? = events[Self.backchannelLogoutEvent] else {
            return .failure(.events)
        }
        // A nonce would make it an ID token (§2.4: prohibited).
        guard claims["nonce"] == nil else { return .failure(.nonce) }
        guard case .string(let jti)? = claims["jti"], !jti.isEmpty else { return .failure(.jti) }
        let sid = claims["sid"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        let sub = claims["sub"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        guard sid != nil || sub != nil else { return .failure(.subject) }
        return .success(LogoutToken(providerSessionID: sid, subject: sub, jti: jti, issuedAt: iat.double))
    }

    /// The claims and header of `token` when its signature verifies with a key of `issuer`,
    /// with that issuer's leeway.
    private static func signed(
        _ token: String, keys: KeySnapshot, issuer: String
    ) -> Result<(JSONObject, JSONObject, Double), Failure> {
        var token = token
        let result = token.withUTF8 { TokenVerifier.signedClaims(token: UnsafeRawBufferPointer($0), keys: keys) }
        switch result {
        case .failure(let rejection):
            return .failure(rejection.failure == .wrongIssuer ? .issuer : .signature)
        case .success(let (claims, header, issuerIndex)):
            guard keys.issuers[issuerIndex].issuer == issuer else { return .failure(.issuer) }
            return .success((claims, header, Double(keys.issuers[issuerIndex].leewaySeconds)))
        }
    }

    private static func audience(_ value: JSONValue?, contains clientID: String) -> Bool {
        switch value {
        case .string(let audience)?: return audience == clientID
        case .array(let audiences)?: return audiences.contains(.string(clientID))
        default: return false
        }
    }
}
