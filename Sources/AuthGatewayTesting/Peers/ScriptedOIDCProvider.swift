import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

import AuthGatewayDemo
import AuthGateway

/// An OpenID Provider on loopback, on two ports as real deployments often split it: the
/// issuer's own origin serves `/.well-known/openid-configuration` and `/jwks`; another origin
/// serves `/token` (RFC 6749 §6 refresh, client `gateway`/`s3cret` by HTTP Basic, rotating
/// refresh tokens), `/userinfo` (Bearer) and `/introspect` (RFC 7662, the same client). The document points at both; tests can make
/// the document fail, lie about its issuer, or drop an endpoint.
package final class ScriptedOIDCProvider: Sendable {
    package struct Script: Sendable {
        package var documentStatus = 200
        /// The `issuer` the document claims (nil: the real one).
        package var claimedIssuer: String?
        package var servesUserinfo = true
        /// Whether the document names `introspection_endpoint` (RFC 7662 on the endpoints' origin).
        package var servesIntrospection = true
        /// Opaque tokens the introspection endpoint knows, and its answer for each.
        package var introspectable: [String: JSONValue] = [:]
        package var signers: [JWTSigner]
    }

    package let discovery: ScriptedAuthService
    package let endpoints: ScriptedAuthService
    private let script: NIOLockedValueBox<Script>
    /// Valid refresh tokens and the subject they belong to.
    private let sessions = NIOLockedValueBox<[String: String]>([:])

    package static let clientID = "gateway"
    package static let clientSecret = "s3cret"

    private init(discovery: ScriptedAuthService, endpoints: ScriptedAuthService, script: NIOLockedValueBox<Script>) {
        self.discovery = discovery
        self.endpoints = endpoints
        self.script = script
    }

    package static func start(signer: JWTSigner = TestKeys.rsa) async throws -> ScriptedOIDCProvider {
        let script = NIOLockedValueBox(Script(signers: [signer]))
        let holder = NIOLockedValueBox<ScriptedOIDCProvider?>(nil)
        let discovery = try await ScriptedAuthService.start { request in
            guard let provider = holder.withLockedValue({ $0 }) else {
                return SimpleResponse(status: .serviceUnavailable)
            }
            return provider.answerDiscovery(request)
        }
        let endpoints = try await ScriptedAuthService.start { request in
            guard let provider = holder.withLockedValue({ $0 }) else {
                return SimpleResponse(status: .serviceUnavailable)
            }
            return provider.answerEndpoint(request)
        }
        let provider = ScriptedOIDCProvider(discovery: discovery, endpoints: endpoints, script: script)
        holder.withLockedValue { $0 = provider }
        return provider
    }

    package var issuer: String { self.discovery.baseURL }
    package var documentFetches: Int { self.discovery.calls("/.well-known/openid-configuration") }
    package var jwksFetches: Int { self.discovery.calls("/jwks") }
    package var tokenCalls: Int { self.endpoints.calls("/token") }
    package var userinfoCalls: Int { self.endpoints.calls("/userinfo") }
    package var introspectionCalls: Int { self.endpoints.calls("/introspect") }

    package func update(_ change: (inout Script) -> Void) { self.script.withLockedValue(change) }

    /// An access token of this provider.
    package func token(subject: String, expiresIn: Double = 300, signer: JWTSigner? = nil) -> String {
        let signer = signer ?? self.script.withLockedValue { $0.signers[0] }
        return TestKeys.token(signer: signer, subject: subject, expiresIn: expiresIn, issuer: self.issuer)
    }

    /// A refresh token for `subject`, as if the user had logged in.
    package func login(subject: String) -> String {
        let token = "rt-" + UUID().uuidString.lowercased()
        self.sessions.withLockedValue { $0[token] = subject }
        return token
    }

    package func stop() async {
        await self.discovery.stop()
        await self.endpoints.stop()
    }

    private func answerDiscovery(_ request: SimpleRequest) -> SimpleResponse {
        let script = self.script.withLockedValue { $0 }
        switch request.path {
        case "/.well-known/openid-configuration":
            guard script.documentStatus == 200 else {
                return .json(HTTPResponseStatus(statusCode: script.documentStatus), ["error": "unavailable"])
            }
            var document: JSONObject = [
                "issuer": .string(script.claimedIssuer ?? self.issuer),
                "jwks_uri": .string(self.issuer + "/jwks"),
                "token_endpoint": .string(self.endpoints.baseURL + "/token"),
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            ]
            if script.servesUserinfo { document["userinfo_endpoint"] = .string(self.endpoints.baseURL + "/userinfo") }
            if script.servesIntrospection {
                document["introspection_endpoint"] = .string(self.endpoints.baseURL + "/introspect")
            }
            return .json(.ok, .object(document))
        case "/jwks":
            return .json(.ok, ["keys": .array(script.signers.map { try! $0.publicJWK() })])
        default:
            return SimpleResponse(status: .notFound)
        }
    }

    private func answerEndpoint(_ request: SimpleRequest) -> SimpleResponse {
        switch (request.method, request.path) {
        case (.POST, "/token"):
            let basic = "Basic " + Data("\(Self.clientID):\(Self.clientSecret)".utf8).base64EncodedString()
            guard request.headers.first(name: "authorization") == basic else {
                return .json(.unauthorized, ["error": "invalid_client"])
            }
            let form = Dictionary(
                request.bodyText.split(separator: "&").map { pair -> (String, String) in
                    let parts = pair.split(separator: "=", maxSplits: 1).map {
                        String($0).removingPercentEncoding ?? ""
                    }
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                },
                uniquingKeysWith: { first, _ in first }
            )
            guard form["grant_type"] == "refresh_token", let old = form["refresh_token"],
                let subject = self.sessions.withLockedValue({ $0.removeValue(forKey: old) })
            else {
                return .json(.badRequest, ["error": "invalid_grant"])
            }
            let rotated = self.login(subject: subject)
            return .json(
                .ok,
                [
                    "access_token": .string(self.token(subject: subject)), "refresh_token": .string(rotated),
                    "token_type": "Bearer", "expires_in": 300,
                ])
        case (.POST, "/introspect"):
            let basic = "Basic " + Data("\(Self.clientID):\(Self.clientSecret)".utf8).base64EncodedString()
            guard request.headers.first(name: "authorization") == basic else {
                return .json(.unauthorized, ["error": "invalid_client"])
            }
            let token = request.bodyText.split(separator: "&").first { $0.hasPrefix("token=") }.map {
                String($0.dropFirst(6)).removingPercentEncoding ?? ""
            }
            let answer =
                token.flatMap { token in self.script.withLockedValue { $0.introspectable[token] } } ?? ["active": false]
            return .json(.ok, answer)
        case (.GET, "/userinfo"):
            // An opaque token the introspection endpoint knows as active.
            if let header = request.headers.first(name: "authorization"), header.hasPrefix("Bearer "),
                case .string(let subject)? = self.script.withLockedValue({
                    $0.introspectable[String(header.dropFirst(7))]?["sub"]
                })
            {
                return .json(.ok, ["sub": .string(subject), "email": .string("\(subject)@idp.test")])
            }
            guard let header = request.headers.first(name: "authorization"), header.hasPrefix("Bearer "),
                let payload = header.dropFirst(7).split(separator: ".").dropFirst().first.flatMap({
                    Base64URL.decode($0)
                }),
                let claims = try? JSONValue(parsingBytes: payload), case .string(let subject)? = claims["sub"]
            else {
                return .json(.unauthorized, ["error": "invalid_token"])
            }
            return .json(
                .ok,
                [
                    "sub": .string(subject), "email": .string("\(subject)@idp.test"),
                    "preferred_username": .string(subject),
                ])
        default:
            return SimpleResponse(status: .notFound)
        }
    }
}
