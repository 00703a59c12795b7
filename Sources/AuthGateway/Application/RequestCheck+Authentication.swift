import Foundation

/// `check --request`'s authentication: the API key step, `--claims`, or the token the request
/// carries (`--token`, or a header that is a token source), verified with the static keys.
extension RequestCheck {
    enum Authentication {
        case identity(Identity, String)
        case anonymous(String)
        case refused(GatewayError, String)
    }

    /// The header `--token` goes in: the first configured token source, as a client sends it.
    static func tokenHeader(_ token: String, sources: [TokenSourceConfiguration]) -> (name: String, value: String) {
        switch sources.first {
        case .header(let name, let bearer, _)?: return (name, bearer ? "Bearer \(token)" : token)
        case .cookie(let name)?: return ("Cookie", "\(name)=\(token)")
        // helper/streams hook: the token source docs/streams.md adds.
        case .websocketProtocol(let prefix)?:
            return ("Sec-WebSocket-Protocol", prefix + Base64URL.encode(Array(token.utf8)))
        case nil: return ("Authorization", "Bearer \(token)")
        }
    }

    static func object(_ text: String, option: String) throws(UsageError) -> JSONObject {
        guard let value = try? JSONValue(parsing: text), case .object(let object) = value else {
            throw UsageError("\(option): expected a JSON object")
        }
        return object
    }

    /// Claims that act as a verified token's (`--claims`, `--no-verify`).
    static func unverified(_ claims: JSONObject, issuerIndex: Int) -> VerifiedToken {
        VerifiedToken(
            issuerIndex: issuerIndex, generation: 0, claims: claims, subject: claims["sub"]?.stringValue,
            expiresAt: claims["exp"]?.numberValue?.double ?? .infinity, notBefore: claims["nbf"]?.numberValue?.double,
            issuedAt: nil, leewaySeconds: 0)
    }

    func authenticate(_ request: AuthRequest) throws(UsageError) -> Authentication {
        let tokens = self.configuration.tokens
        guard request.route.auth != .none else { return .anonymous("none needed (auth none)") }
        if let apiKeys = tokens.apiKeys {
            let step = APIKeyAuthentication(table: APIKeyTable(apiKeys), tokenSources: tokens.sources)
            switch step.authenticate(request) {
            case .identity(let identity)?:
                return .identity(identity, "API key \"\(identity.apiKeyID ?? "")\" (header \(apiKeys.header))")
            case .refused(let error)?:
                return .refused(error, "API key refused (header \(apiKeys.header))")
            case nil:
                break
            }
        }
        let extracted = TokenExtractor.extract(from: request.headers, sources: tokens.sources)
        if let claims = self.options.claims {
            guard extracted == .none else { throw UsageError("give either --claims or a token, not both") }
            let identity = Identity(
                token: Self.unverified(try Self.object(claims, option: "--claims"), issuerIndex: -1),
                accessToken: ExtractedToken(value: "", location: .header(name: "Authorization", bearer: true)),
                issuer: "--claims")
            return .identity(identity, "claims from --claims (not verified)")
        }
        switch extracted {
        case .conflict:
            return .refused(.ambiguousToken, "two different tokens")
        case .none:
            if request.route.auth == .optional { return .anonymous("anonymous (no credential; the route is optional)") }
            return .refused(.tokenMissing, "no credential (use --token, --claims or --header)")
        case .found(let token):
            return self.verify(token, request)
        }
    }

    private func verify(_ token: ExtractedToken, _ request: AuthRequest) -> Authentication {
        let keys = request.keys
        var text = String(token.value)
        if !self.options.verify {
            let claims = text.withUTF8 { bytes in try? CompactJWS.parse(UnsafeRawBufferPointer(bytes)).payload }
            guard let claims else { return .refused(.tokenRejected(.malformed), "the token is not a compact JWS") }
            let issuer = claims["iss"]?.stringValue ?? ""
            let verified = Self.unverified(claims, issuerIndex: keys.issuerIndex(for: issuer) ?? -1)
            return self.current(verified, token, issuer: issuer, how: "token read without verification (--no-verify)")
        }
        let result = text.withUTF8 { TokenVerifier.verifySignature(token: UnsafeRawBufferPointer($0), keys: keys) }
        switch result {
        case .success(let verified):
            let issuer = keys.issuers[verified.issuerIndex].issuer
            return self.current(verified, token, issuer: issuer, how: "token verified (issuer \(issuer))")
        case .failure(let rejection):
            var why = "token refused"
            if rejection.failure == .unknownKey, let index = rejection.issuerIndex, keys.issuers[index].hasRemoteKeys {
                why += " (its issuer's keys come from a JWKS, not fetched offline: try --no-verify)"
            }
            return .refused(.tokenRejected(rejection.failure), why)
        }
    }

    private func current(
        _ verified: VerifiedToken, _ token: ExtractedToken, issuer: String, how: String
    )
        -> Authentication
    {
        if let failure = verified.timeFailure(now: self.now) {
            return .refused(.tokenRejected(failure), "token refused at this time")
        }
        return .identity(Identity(token: verified, accessToken: token, issuer: issuer), how)
    }

    /// Proof of possession as `ProofOfPossession` decides it before looking at a proof: on a
    /// `dpop: required` route a token not bound to a key is refused, and anywhere but `off` a
    /// bound token must come with the `DPoP` scheme (and an unbound one without it). A proof
    /// itself is not checked offline (its time, nonce and replay belong to the live request).
    /// API keys skip the step, as they do live.
    func proofOfPossession(_ identity: Identity, route: RouteConfiguration) -> (GatewayError?, String?) {
        guard route.dpop != .off, identity.apiKeyID == nil else { return (nil, nil) }
        let algorithms = self.configuration.tokens.dpop.algorithms.map(\.rawValue).joined(separator: " ")
        let presented = identity.accessToken
        guard case .object(let confirmation)? = identity.token.claims["cnf"], case .string = confirmation["jkt"] else {
            if route.dpop == .required { return (.dpopRequired(algs: algorithms), "the route requires DPoP") }
            if presented.dpopScheme {
                return (.dpopInvalidProof("the access token is not DPoP-bound", algs: algorithms), "DPoP refused")
            }
            return (nil, nil)
        }
        guard presented.dpopScheme, self.options.headers.contains(where: { Self.isDPoPHeader($0) }) else {
            return (.dpopRequired(algs: algorithms), "a DPoP-bound token without its proof")
        }
        return (nil, "DPoP proof present (not checked offline: its time, nonce and replay)")
    }

    private static func isDPoPHeader(_ header: String) -> Bool {
        guard let colon = header.firstIndex(of: ":") else { return false }
        return ASCII.equalsIgnoringCase(header[..<colon].trimmingCharacters(in: .whitespaces), "dpop")
    }

    /// What the live gateway does instead of a refusal for want of credentials: a browser
    /// navigation on a `signIn` route is sent to sign in (`SignInRedirect`).
    func signInRedirect(_ error: GatewayError, route: RouteConfiguration, request: AuthRequest) -> String? {
        guard self.configuration.browserSignIn != nil, route.signIn,
            error == .tokenMissing || error == .refreshRejected,
            BrowserRequest.isNavigation(method: request.method, headers: request.headers)
        else { return nil }
        return "redirected: 302 to sign in (browserSignIn; the provider's authorization_endpoint comes from"
            + " discovery, not fetched offline)"
    }
}
