import AuthGateway
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// `POST /token` (RFC 6749 §3.2): a code with its PKCE verifier, or a refresh token, for tokens.
///
/// The client authenticates with `client_secret_basic` or `client_secret_post` (not both).
/// Every answer carries `Cache-Control: no-store`; refusals are OAuth error bodies
/// (`invalid_request`, `invalid_client` 401, `invalid_grant`, `unsupported_grant_type`).
extension DemoAuthService {
    /// An OAuth error answer of the token endpoint (RFC 6749 §5.2).
    struct OAuthError: Error {
        var status: HTTPResponseStatus = .badRequest
        var code: String
        var description: String

        var response: SimpleResponse {
            var headers: HTTPHeaders = ["Cache-Control": "no-store", "Pragma": "no-cache"]
            if self.status == .unauthorized { headers.add(name: "WWW-Authenticate", value: #"Basic realm="demo""#) }
            return .json(
                self.status, ["error": .string(self.code), "error_description": .string(self.description)],
                headers: headers)
        }
    }

    /// The token endpoint, or a call held by the `.hold` test hook.
    func token(_ request: SimpleRequest, on eventLoop: EventLoop) -> EventLoopFuture<SimpleResponse> {
        let held: EventLoopPromise<SimpleResponse>? = self.records.withLockedValue { records in
            guard records.tokenFailure == .hold, records.takeTokenFailure() == .hold else { return nil }
            let promise = eventLoop.makePromise(of: SimpleResponse.self)
            records.heldTokenCalls.append(promise)
            return promise
        }
        if let held {
            let grant = DemoForm(encoded: request.bodyText)["grant_type"]
            self.records.withLockedValue { records in
                records.tokenCalls.total += 1
                if grant == "authorization_code" { records.tokenCalls.authorizationCode += 1 }
                if grant == "refresh_token" { records.tokenCalls.refreshToken += 1 }
            }
            return held.futureResult
        }
        return eventLoop.makeSucceededFuture(self.token(request))
    }

    func token(_ request: SimpleRequest) -> SimpleResponse {
        let form = DemoForm(encoded: request.bodyText)
        let forced = self.records.withLockedValue { records in
            records.tokenCalls.total += 1
            switch form["grant_type"] {
            case "authorization_code"?:
                records.tokenCalls.authorizationCode += 1
                // Recorded before any forced failure too: a test looks for it in the gateway's logs.
                records.lastCodeVerifier = form["code_verifier"]
            case "refresh_token"?: records.tokenCalls.refreshToken += 1
            default: break
            }
            return records.takeTokenFailure()
        }
        switch forced {
        case .status(let status)?:
            return OAuthError(
                status: HTTPResponseStatus(statusCode: status), code: "temporarily_unavailable",
                description: "failing on purpose (test hook)"
            ).response
        case .error(let code, let status)?:
            return OAuthError(
                status: HTTPResponseStatus(statusCode: status), code: code,
                description: "refused on purpose (test hook)"
            ).response
        case .body(let text, let status, let contentType)?:
            return SimpleResponse(
                status: HTTPResponseStatus(statusCode: status), headers: ["Content-Type": contentType],
                body: ByteBuffer(string: text))
        case .hangUp?:
            var response = SimpleResponse(status: .internalServerError)
            response.hangsUp = true
            return response
        case .hold?, nil:
            break
        }
        do {
            guard !form.malformed, form.repeated.isEmpty else {
                throw OAuthError(code: "invalid_request", description: "malformed or repeated parameters")
            }
            let client = try self.authenticateClient(request, form)
            switch form["grant_type"] {
            case "authorization_code"?: return try self.redeemCode(form, client: client)
            case "refresh_token"?: return try self.refresh(form, client: client)
            case nil: throw OAuthError(code: "invalid_request", description: "grant_type is required")
            case .some: throw OAuthError(code: "unsupported_grant_type", description: "unsupported grant_type")
            }
        } catch let error as OAuthError {
            return error.response
        } catch {
            return OAuthError(status: .internalServerError, code: "server_error", description: "signing failed")
                .response
        }
    }

    /// `client_secret_basic` (both parts form-encoded before base64, RFC 6749 §2.3.1) or
    /// `client_secret_post`.
    private func authenticateClient(_ request: SimpleRequest, _ form: DemoForm) throws(OAuthError) -> DemoOIDCClient {
        let invalid = OAuthError(
            status: .unauthorized, code: "invalid_client", description: "client authentication failed")
        var credentials: (id: String, secret: String)
        if let header = request.headers.first(name: "authorization") {
            guard form["client_secret"] == nil else {
                throw OAuthError(code: "invalid_request", description: "more than one client authentication")
            }
            guard header.lowercased().hasPrefix("basic "),
                let decoded = Data(base64Encoded: String(header.dropFirst(6).drop { $0 == " " })),
                let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":"),
                let id = DemoForm.decode(text[..<colon]),
                let secret = DemoForm.decode(text[text.index(after: colon)...])
            else { throw invalid }
            credentials = (id, secret)
        } else {
            guard let id = form["client_id"], let secret = form["client_secret"] else { throw invalid }
            credentials = (id, secret)
        }
        if let formID = form["client_id"], formID != credentials.id { throw invalid }
        guard let client = self.clientsBox.withLockedValue({ $0[credentials.id] }),
            // Digests compare in constant time.
            SHA256.hash(data: Data(client.clientSecret.utf8)) == SHA256.hash(data: Data(credentials.secret.utf8))
        else { throw invalid }
        return client
    }

    private func redeemCode(_ form: DemoForm, client: DemoOIDCClient) throws -> SimpleResponse {
        guard let code = form["code"] else {
            throw OAuthError(code: "invalid_request", description: "code is required")
        }
        self.records.withLockedValue { $0.lastCodeVerifier = form["code_verifier"] }
        let redemption = self.state.withLockedValue {
            $0.redeem(
                code: code, clientID: client.clientID, redirectURI: form["redirect_uri"],
                verifier: form["code_verifier"], now: self.now)
        }
        switch redemption {
        case .refused(let reason):
            throw OAuthError(code: "invalid_grant", description: reason)
        case .granted(let grant):
            let refreshToken = DemoSecret.make()
            self.state.withLockedValue { $0.recordRefreshToken(refreshToken, for: grant, code: code) }
            return try self.tokenAnswer(
                grantType: "authorization_code", clientID: client.clientID, userID: grant.userID, sid: grant.sid,
                authTime: grant.authTime, nonce: grant.nonce, scope: grant.scope, refreshToken: refreshToken)
        }
    }

    private func refresh(_ form: DemoForm, client: DemoOIDCClient) throws -> SimpleResponse {
        guard let token = form["refresh_token"] else {
            throw OAuthError(code: "invalid_request", description: "refresh_token is required")
        }
        guard let grant = self.state.withLockedValue({ $0.refreshGrant(token: token, clientID: client.clientID) })
        else {
            throw OAuthError(code: "invalid_grant", description: "unknown, revoked or another client's refresh token")
        }
        // A refreshed ID token has no nonce (OpenID Connect Core §12.2).
        return try self.tokenAnswer(
            grantType: "refresh_token", clientID: client.clientID, userID: grant.userID, sid: grant.sid,
            authTime: grant.authTime, nonce: nil, scope: grant.scope, refreshToken: nil)
    }

    private func tokenAnswer(
        grantType: String, clientID: String, userID: String, sid: String, authTime: Int, nonce: String?,
        scope: String, refreshToken: String?
    ) throws -> SimpleResponse {
        guard let user = Self.users.first(where: { $0.userID == userID }) else {
            throw OAuthError(code: "invalid_grant", description: "unknown user")
        }
        let now = self.now
        let accessToken = try self.signer.sign(self.accessTokenClaims(for: user, now: now))
        let tampering = self.records.withLockedValue { records in
            defer { records.nextIDTokenTampering = nil }
            return records.nextIDTokenTampering
        }
        let idToken = try self.idToken(
            for: user, clientID: clientID, sid: sid, authTime: authTime, nonce: nonce, now: now, tampering: tampering)
        var document: JSONObject = [
            "access_token": .string(accessToken), "token_type": "Bearer",
            "expires_in": .number(JSONNumber(self.tokenLifetimeSeconds)), "id_token": .string(idToken),
            "scope": .string(scope),
        ]
        if let refreshToken { document["refresh_token"] = .string(refreshToken) }
        let issued = IssuedTokens(
            grantType: grantType, clientID: clientID, sid: sid, accessToken: accessToken, idToken: idToken,
            refreshToken: refreshToken)
        self.records.withLockedValue { $0.lastTokens = issued }
        return .json(.ok, .object(document), headers: ["Cache-Control": "no-store", "Pragma": "no-cache"])
    }

    /// An ID token (OpenID Connect Core §2), spoiled as `tampering` says.
    func idToken(
        for user: User, clientID: String, sid: String, authTime: Int, nonce: String?, now: Int,
        tampering: IDTokenTampering?
    ) throws -> String {
        var claims: JSONObject = [
            "iss": .string(self.issuer), "sub": .string(user.userID), "aud": .string(clientID),
            "azp": .string(clientID), "iat": .number(JSONNumber(now)),
            "exp": .number(JSONNumber(now + Self.idTokenLifetimeSeconds)), "auth_time": .number(JSONNumber(authTime)),
            "sid": .string(sid),
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        claims = claims.merging(Self.profileClaims(of: user))
        switch tampering {
        case .wrongNonce?: claims["nonce"] = "not-the-nonce-that-was-sent"
        case .missingNonce?: claims["nonce"] = nil
        case .wrongAudience?: claims["aud"] = "another-client"
        case .wrongIssuer?: claims["iss"] = .string(self.issuer + "/elsewhere")
        case .expired?:
            claims["iat"] = .number(JSONNumber(now - 600))
            claims["exp"] = .number(JSONNumber(now - 300))
        case .badSignature?, nil: break
        }
        let token = try self.signer.sign(claims)
        guard tampering == .badSignature, let dot = token.lastIndex(of: "."),
            var signature = Base64URL.decode(token[token.index(after: dot)...])
        else { return token }
        signature[signature.count / 2] ^= 0x01
        return token[...dot] + Base64URL.encode(signature)
    }

    /// `GET /userinfo` with `Authorization: Bearer <access token>` (Core §5.3).
    func userinfo(_ request: SimpleRequest) -> SimpleResponse {
        self.records.withLockedValue { $0.userinfoCalls += 1 }
        guard let header = request.headers.first(name: "authorization"), header.lowercased().hasPrefix("bearer "),
            let user = self.verifiedUser(header.dropFirst(7).drop { $0 == " " })
        else {
            return .json(
                .unauthorized, ["error": "invalid_token"],
                headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#, "Cache-Control": "no-store"])
        }
        let claims = JSONObject([("sub", .string(user.userID))]).merging(Self.profileClaims(of: user))
        return .json(.ok, .object(claims), headers: ["Cache-Control": "no-store"])
    }
}
