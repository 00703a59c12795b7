import NIOHPACK
import NIOHTTP1
import Testing

@testable import AuthGateway

/// "Every 401 carries a challenge" (RFC 9110 §15.5.2, docs/errors.md): every kind of
/// `GatewayError` whose status is 401 — `GatewayError.everyKind`, which the compiler keeps
/// complete — answers with one well-formed `WWW-Authenticate`, over HTTP, over gRPC and to the
/// proxies of authorizer mode.
@Suite("WWW-Authenticate on every 401")
struct ChallengeTests {
    /// A challenge parsed by RFC 9110 §11.6.1: `auth-scheme [ 1*SP #auth-param ]`, each
    /// parameter `token BWS "=" BWS ( token / quoted-string )`.
    struct Challenge {
        var scheme: String
        var parameters: [String: String] = [:]

        init?(_ text: String) {
            var rest = Substring(text)
            let scheme = rest.prefix { Self.isTokenCharacter($0) }
            guard !scheme.isEmpty else { return nil }
            self.scheme = String(scheme)
            rest = rest.dropFirst(scheme.count)
            guard !rest.isEmpty else { return }
            guard rest.first == " " else { return nil }
            while let first = rest.first, first == " " || first == "," { rest = rest.dropFirst() }
            while !rest.isEmpty {
                let name = rest.prefix { Self.isTokenCharacter($0) }
                guard !name.isEmpty else { return nil }
                rest = rest.dropFirst(name.count).drop { $0 == " " || $0 == "\t" }
                guard rest.first == "=" else { return nil }
                rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
                var value = ""
                if rest.first == "\"" {
                    rest = rest.dropFirst()
                    var closed = false
                    while let character = rest.popFirst() {
                        if character == "\"" {
                            closed = true
                            break
                        }
                        if character == "\\" {
                            guard let escaped = rest.popFirst() else { return nil }
                            value.append(escaped)
                        } else {
                            // qdtext: HTAB, SP and visible characters other than `"` and `\`.
                            guard character == "\t" || character.unicodeScalars.allSatisfy({ $0.value >= 0x20 })
                            else { return nil }
                            value.append(character)
                        }
                    }
                    guard closed else { return nil }
                } else {
                    let token = rest.prefix { Self.isTokenCharacter($0) }
                    guard !token.isEmpty else { return nil }
                    value = String(token)
                    rest = rest.dropFirst(token.count)
                }
                guard self.parameters.updateValue(value, forKey: name.lowercased()) == nil else { return nil }
                rest = rest.drop { $0 == " " || $0 == "\t" }
                guard !rest.isEmpty else { return }
                guard rest.first == "," else { return nil }
                rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" }
            }
            return nil
        }

        /// tchar (RFC 9110 §5.6.2).
        static func isTokenCharacter(_ character: Character) -> Bool {
            guard character.isASCII, let value = character.asciiValue else { return false }
            return (value >= 0x30 && value <= 0x39) || (value >= 0x41 && value <= 0x5A)
                || (value >= 0x61 && value <= 0x7A)
                || "!#$%&'*+-.^_`|~".contains(character)
        }
    }

    static let unauthorized = GatewayError.everyKind.filter { $0.status == .unauthorized }

    @Test("every kind of error is listed once, and its example is of its kind")
    func everyKindIsListed() {
        for name in GatewayError.KindName.allCases {
            #expect(name.example.kindName == name, "\(name)")
        }
        let all = GatewayError.everyKind
        #expect(all.count == GatewayError.KindName.allCases.count - 1 + TokenFailure.allCases.count)
        #expect(Set(all.map(\.errorType)).count == all.count)
        // The 401s docs/errors.md lists, so that the walk below cannot pass by walking nothing.
        #expect(
            Set(Self.unauthorized.map(\.errorType)).isSuperset(of: [
                "token.missing", "token.expired", "token.refresh_rejected", "token.profile_rejected", "token.inactive",
                "apikey.invalid", "dpop.required", "dpop.invalid_proof", "dpop.use_nonce",
            ]))
    }

    @Test("the parser takes challenges apart and refuses malformed ones")
    func parser() throws {
        let bearer = try #require(
            Challenge(#"Bearer realm="auth-gateway", error="invalid_token", error_description="a \"b\"""#))
        #expect(bearer.scheme == "Bearer")
        #expect(
            bearer.parameters == ["realm": "auth-gateway", "error": "invalid_token", "error_description": "a \"b\""])
        #expect(Challenge("Bearer")?.parameters == [:])
        #expect(Challenge("DPoP algs=ES256")?.parameters == ["algs": "ES256"])
        for malformed in [
            "", " Bearer", "Bearer realm=", #"Bearer realm="open"#, #"Bearer realm="a" error="b""#,
            #"Bearer realm="a", realm="b""#, "Bearer =x", #"Bearer realm="a","#, "Bear er",
        ] {
            #expect(Challenge(malformed) == nil, "\(malformed)")
        }
    }

    /// The one challenge an answer to `error` must carry, by docs/errors.md.
    static func expectChallenge(_ value: String?, for error: GatewayError, _ via: String) {
        guard let value, let challenge = Challenge(value) else {
            Issue.record("\(error.errorType) (\(via)): no well-formed WWW-Authenticate: \(value ?? "none")")
            return
        }
        if error.errorType.hasPrefix("dpop.") {
            // RFC 9449 §7.1: the DPoP scheme, with the accepted algorithms.
            #expect(challenge.scheme == "DPoP", "\(error.errorType) (\(via))")
            #expect(challenge.parameters["algs"]?.isEmpty == false, "\(error.errorType) (\(via))")
        } else {
            #expect(challenge.scheme == "Bearer", "\(error.errorType) (\(via))")
            #expect(challenge.parameters["realm"] == "auth-gateway", "\(error.errorType) (\(via))")
        }
        // An `error` attribute names the problem's RFC 6750 code, and its description is the detail.
        if let code = challenge.parameters["error"] {
            #expect(code == error.oauthError, "\(error.errorType) (\(via))")
            #expect(challenge.parameters["error_description"] == error.detail, "\(error.errorType) (\(via))")
        } else {
            #expect(challenge.parameters["error_description"] == nil, "\(error.errorType) (\(via))")
        }
        // A refused token is named invalid_token (RFC 6750 §3.1); without a token, no error.
        if error.oauthError == "invalid_token" {
            #expect(challenge.parameters["error"] == "invalid_token", "\(error.errorType) (\(via))")
        }
        if error.errorType == "token.missing" {
            #expect(challenge.parameters == ["realm": "auth-gateway"])
        }
    }

    @Test("every 401 carries one well-formed WWW-Authenticate", arguments: Self.unauthorized)
    func everyUnauthorizedAnswerIsChallenged(_ error: GatewayError) {
        let response = LocalResponse.problem(error, requestID: "r")
        #expect(response.status == .unauthorized)
        #expect(response.headers["WWW-Authenticate"].count == 1, "\(error.errorType)")
        Self.expectChallenge(response.headers.first(name: "WWW-Authenticate"), for: error, "HTTP")
        // The sign-in endpoints' HTML page is the same answer.
        let page = LocalResponse.htmlPage(error, requestID: "r")
        Self.expectChallenge(page.headers.first(name: "WWW-Authenticate"), for: error, "HTML page")
    }

    @Test("gRPC: every 401 is UNAUTHENTICATED with the same www-authenticate", arguments: Self.unauthorized)
    func everyUnauthorizedGRPCAnswerIsChallenged(_ error: GatewayError) {
        let response = LocalResponse.problem(error, requestID: "r")
        let trailers = GRPCStatus.trailersOnly(response, requestID: "r", secrets: SecretHeaderNames())
        #expect(trailers.first(name: "grpc-status") == "16")
        #expect(trailers["www-authenticate"].count == 1, "\(error.errorType)")
        Self.expectChallenge(trailers.first(name: "www-authenticate"), for: error, "gRPC")
    }

    @Test("authorizer mode: every 401 reaches nginx, Caddy and Envoy with its challenge", arguments: Self.unauthorized)
    func everyUnauthorizedAuthorizerAnswerIsChallenged(_ error: GatewayError) {
        let response = LocalResponse.problem(error, requestID: "r")
        // auth-request (nginx): a 401 stays a 401; forward-auth (Caddy) gets the answer as it is.
        let nginx = AuthorizerEndpoints.forNginx(response)
        #expect(nginx.status == .unauthorized)
        Self.expectChallenge(nginx.headers.first(name: "WWW-Authenticate"), for: error, "auth-request")
        // ext_authz (Envoy): the denied response carries the answer's headers.
        let denied = CheckMessages.denied(
            status: 401, headers: response.headers.map { ($0.name, $0.value) }, body: response.body, message: "")
        let challenges = denied.deniedResponse.headers.filter { $0.header.key == "www-authenticate" }
        #expect(challenges.count == 1, "\(error.errorType)")
        Self.expectChallenge(challenges.first?.header.value, for: error, "ext_authz")
    }

    /// auth-request turns a sign-in redirect into a 401 with its `Location` (nginx passes on
    /// only 401 and 403; docs/authorizer.md): a 401 like any other, with its challenge.
    @Test("authorizer mode: the sign-in redirect nginx gets as a 401 carries a challenge")
    func nginxSignInRedirectIsChallenged() {
        let nginx = AuthorizerEndpoints.forNginx(.redirect(to: "https://idp.test/authorize?x=1"))
        #expect(nginx.status == .unauthorized)
        let challenge = nginx.headers.first(name: "WWW-Authenticate").flatMap(Challenge.init)
        #expect(challenge?.scheme == "Bearer")
        #expect(challenge?.parameters["realm"] == "auth-gateway")
        #expect(nginx.headers.first(name: "Location") == "https://idp.test/authorize?x=1")
    }
}
