import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A relying party and its user's browser, scripted over real sockets against the demo's
/// OpenID Provider: the authorization request with PKCE, the login form, the code exchange,
/// and a cookie jar holding the provider's cookie.
final class ScriptedRelyingParty: Sendable {
    static let redirectURI = "http://127.0.0.1:1/.gateway/callback"
    static let postLogoutRedirectURI = "http://127.0.0.1:1/"

    let provider: DemoAuthService
    let client: DemoOIDCClient
    /// The browser's cookies (name → value).
    private let cookies = NIOLockedValueBox<[String: String]>([:])

    init(provider: DemoAuthService, client: DemoOIDCClient) {
        self.provider = provider
        self.client = client
    }

    /// A registered client whose back-channel logout URI is `backChannelLogoutURI`.
    static func client(backChannelLogoutURI: String? = nil) -> DemoOIDCClient {
        DemoOIDCClient(
            clientID: "gateway", clientSecret: "s3cret word", redirectURIs: [Self.redirectURI],
            postLogoutRedirectURIs: [Self.postLogoutRedirectURI], backChannelLogoutURI: backChannelLogoutURI)
    }

    /// One sign-in attempt's secrets, as a relying party keeps them in its flow record.
    struct Flow {
        var state = "state-" + UUID().uuidString
        var nonce = "nonce-" + UUID().uuidString
        var verifier = Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
        var challenge: String { Base64URL.encode(SHA256.hash(data: Data(self.verifier.utf8))) }
    }

    func authorizationURL(_ flow: Flow, changing change: (inout [(String, String)]) -> Void = { _ in }) -> String {
        var fields = [
            ("response_type", "code"), ("client_id", self.client.clientID), ("redirect_uri", Self.redirectURI),
            ("scope", "openid profile email offline_access"), ("state", flow.state), ("nonce", flow.nonce),
            ("code_challenge", flow.challenge), ("code_challenge_method", "S256"),
        ]
        change(&fields)
        return self.provider.authorizationEndpoint + "?" + Self.form(fields)
    }

    /// The provider's redirect after the form was posted as `userName` (or its page, when it
    /// answered with one).
    func signIn(
        _ flow: Flow, as userName: String = "alice@example.com", password: String? = nil
    ) async throws
        -> TestResponse
    {
        let page = try await self.send(.GET, self.authorizationURL(flow))
        guard page.status == 200 else { return page }
        var fields = Self.hiddenFields(of: page.text)
        fields += [
            ("username", userName), ("password", password ?? Self.password(of: userName)), ("action", "sign-in"),
        ]
        return try await self.send(.POST, self.provider.authorizationEndpoint, form: fields)
    }

    /// Signs in and returns the code (after checking `state` came back).
    func code(_ flow: Flow, as userName: String = "alice@example.com") async throws -> String {
        let answer = try await self.signIn(flow, as: userName)
        let query = Self.query(of: answer.header("location") ?? "")
        // 303 after the form; 302 when the provider session skipped it.
        guard answer.status == 303 || answer.status == 302, query["state"] == flow.state, let code = query["code"]
        else {
            throw ScriptError("no code: \(answer.status) \(answer.headers) \(answer.text)")
        }
        return code
    }

    /// `POST /token` with `client_secret_basic` (or `client_secret_post` with `basic: false`).
    func token(_ fields: [(String, String)], basic: Bool = true, secret: String? = nil) async throws -> TestResponse {
        let secret = secret ?? self.client.clientSecret
        var fields = fields
        var headers: [(String, String)] = []
        if basic {
            let credentials = Self.formEncode(self.client.clientID) + ":" + Self.formEncode(secret)
            headers.append(("Authorization", "Basic " + Data(credentials.utf8).base64EncodedString()))
        } else {
            fields += [("client_id", self.client.clientID), ("client_secret", secret)]
        }
        return try await self.send(.POST, self.provider.tokenEndpoint, form: fields, headers: headers)
    }

    func exchange(_ code: String, _ flow: Flow, basic: Bool = true) async throws -> TestResponse {
        try await self.token(
            [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", Self.redirectURI),
                ("code_verifier", flow.verifier),
            ], basic: basic)
    }

    /// Verifies `token` by the keys the provider's `jwks_uri` serves, for `audience`.
    func verify(_ token: String, audience: String?) async throws -> VerifiedToken {
        let document = try await self.send(.GET, self.provider.discoveryURL).json
        let jwks = try await self.send(.GET, try #require(document?["jwks_uri"]?.stringValue))
        let keys = try JWKSet.parse(text: jwks.text).keys
        let issuer = KeySnapshot.Issuer(
            issuer: try #require(document?["issuer"]?.stringValue), audiences: audience.map { [$0] },
            leewaySeconds: 0, requiredClaims: ["sub"],
            keysByID: Dictionary(keys.map { ($0.kid ?? "", $0) }, uniquingKeysWith: { $1 }), keysWithoutID: [],
            hasRemoteKeys: false, remoteKeysFetchedAt: nil)
        var token = token
        let result = token.withUTF8 {
            TokenVerifier.verifySignature(
                token: UnsafeRawBufferPointer($0), keys: KeySnapshot(generation: 1, issuers: [issuer]))
        }
        return try result.get()
    }

    /// Sends one request on a fresh connection, with the browser's cookies, keeping the ones set.
    func send(
        _ method: HTTPMethod, _ url: String, form: [(String, String)]? = nil, headers: [(String, String)] = []
    ) async throws -> TestResponse {
        let components = try #require(URLComponents(string: url))
        let target = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        var headers = headers
        let cookies = self.cookies.withLockedValue { $0 }
        if !cookies.isEmpty {
            headers.append(
                ("Cookie", cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")))
        }
        if form != nil { headers.append(("Content-Type", "application/x-www-form-urlencoded")) }
        let connection = try await TestConnection.connect(port: try #require(components.port))
        let response = try await withCleanup({ await connection.close() }) {
            try await connection.send(TestRequest(method, target, headers: headers, body: form.map(Self.form)))
        }
        for setCookie in response.headers["set-cookie"] {
            let pair = (setCookie.split(separator: ";").first ?? "").split(separator: "=", maxSplits: 1)
            guard let name = pair.first.map(String.init) else { continue }
            let value = pair.count > 1 ? String(pair[1]) : ""
            let expired = setCookie.lowercased().contains("max-age=0")
            self.cookies.withLockedValue { $0[name] = expired || value.isEmpty ? nil : value }
        }
        return response
    }

    var providerCookie: String? { self.cookies.withLockedValue { $0["demo-idp-session"] } }

    static func password(of userName: String) -> String {
        DemoAuthService.users.first { $0.userName == userName }?.password ?? "?"
    }

    /// The `<input type="hidden">` fields of a page (the values un-escaped).
    static func hiddenFields(of html: String) -> [(String, String)] {
        let pattern = #"<input type="hidden" name="([^"]*)" value="([^"]*)">"#
        let expression = try! NSRegularExpression(pattern: pattern)
        let range = NSRange(html.startIndex..., in: html)
        return expression.matches(in: html, range: range).map { match in
            (Self.unescape(html, match.range(at: 1)), Self.unescape(html, match.range(at: 2)))
        }
    }

    private static func unescape(_ html: String, _ range: NSRange) -> String {
        String(html[Range(range, in: html)!]).replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    }

    static func query(of url: String) -> [String: String] {
        var fields: [String: String] = [:]
        for item in URLComponents(string: url)?.queryItems ?? [] { fields[item.name] = item.value ?? "" }
        return fields
    }

    /// The claims of a JWT, unverified.
    static func claims(of token: String, part: Int = 1) -> JSONObject? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[part]) else { return nil }
        return (try? JSONValue(parsing: String(decoding: bytes, as: UTF8.self)))?.objectValue
    }

    static func form(_ fields: [(String, String)]) -> String {
        fields.map { "\(Self.formEncode($0.0))=\(Self.formEncode($0.1))" }.joined(separator: "&")
    }

    static func formEncode(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._*")
        return (text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
            .replacingOccurrences(of: "%20", with: "+")
    }
}

struct ScriptError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
