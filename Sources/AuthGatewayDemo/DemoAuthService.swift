import AuthGateway
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// The sample auth service of `auth-gateway demo`, shaped like RainMaker's user API
/// (seeds/rainmaker-account-login.md):
///
/// - `POST /v1/login {"user_name","password"}` → `{"status","description","idtoken","accesstoken","refreshtoken"}`;
///   with `"dpop_jkt"` (a key's RFC 7638 thumbprint) the access token is bound to that key
///   (`cnf.jkt`, RFC 9449): the gateway then wants a DPoP proof by it with every request
/// - `POST /v1/login {"user_name","refreshtoken"}` → a new `accesstoken` (the refresh token is
///   not rotated, as in RainMaker)
/// - `GET /v1/user` with `Authorization: <accesstoken>` → the profile
/// - `GET /.well-known/jwks.json` → the signing key (a fresh RSA key every run)
///
/// It is also a small OpenID Provider for browser sign-in (docs/browser-sign-in.md): discovery,
/// an HTML login form, the code flow with PKCE, refresh, userinfo, RP-initiated logout and
/// back-channel logout, for the clients registered with `register(_:)`; see
/// `DemoAuthService+OIDC.swift` for its endpoints and `+TestHooks` for what tests can steer.
public final class DemoAuthService: Sendable {
    public struct User: Sendable {
        public var userID: String
        public var userName: String
        public var password: String
        public var name: String
        public var superAdmin: Bool
    }

    public static let users: [User] = [
        User(
            userID: "u-1001", userName: "alice@example.com", password: "alice-password", name: "Alice",
            superAdmin: false),
        User(
            userID: "u-1002", userName: "admin@example.com", password: "admin-password", name: "Ada Admin",
            superAdmin: true),
    ]

    public let signer: JWTSigner
    public let audience: String
    public let tokenLifetimeSeconds: Int
    private let refreshTokens = NIOLockedValueBox<[String: String]>([:])
    private let issuerBox = NIOLockedValueBox<String>("")
    private let serverBox = NIOLockedValueBox<SimpleHTTPServer?>(nil)
    private let groupBox = NIOLockedValueBox<EventLoopGroup?>(nil)
    /// The OpenID Provider's sessions, codes and refresh tokens.
    let state = NIOLockedValueBox(DemoOIDCState())
    let clientsBox: NIOLockedValueBox<[String: DemoOIDCClient]>
    let records = NIOLockedValueBox(TestRecords())
    let clockBox = NIOLockedValueBox<@Sendable () -> Double>({ Date().timeIntervalSince1970 })

    /// `clients`: the relying parties registered at its OpenID Provider (more with `register(_:)`).
    public init(audience: String = "demo-api", tokenLifetimeSeconds: Int, clients: [DemoOIDCClient] = []) throws {
        self.signer = try JWTSigner.generateRS256(kid: "demo-\(UUID().uuidString.prefix(8).lowercased())")
        self.audience = audience
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.clientsBox = NIOLockedValueBox(Dictionary(clients.map { ($0.clientID, $0) }, uniquingKeysWith: { $1 }))
    }

    /// `iss` of the tokens: the service's own base URL.
    public var issuer: String { self.issuerBox.withLockedValue { $0 } }
    public var baseURL: String { self.issuer }

    public func start(group: EventLoopGroup, port: Int = 0) async throws {
        let server = try await SimpleHTTPServer.start(group: group, port: port) { [self] request, eventLoop in
            self.handle(request, on: eventLoop)
        }
        self.groupBox.withLockedValue { $0 = group }
        self.issuerBox.withLockedValue { $0 = server.baseURL }
        self.serverBox.withLockedValue { $0 = server }
    }

    public func stop() async {
        await self.serverBox.withLockedValue { $0 }?.close()
    }

    /// An event loop of the group the service runs on (for calls it makes itself).
    var eventLoop: EventLoop {
        let group: EventLoopGroup = self.groupBox.withLockedValue { $0 } ?? MultiThreadedEventLoopGroup.singleton
        return group.next()
    }

    /// The RainMaker endpoints and the key set.
    func handle(_ request: SimpleRequest) -> SimpleResponse {
        switch (request.method, request.path) {
        case (.POST, "/v1/login"):
            return self.login(request)
        case (.GET, "/v1/user"):
            return self.profile(request)
        case (.GET, "/.well-known/jwks.json"):
            guard let jwk = try? self.signer.publicJWK() else { return SimpleResponse(status: .internalServerError) }
            return .json(.ok, ["keys": [jwk]])
        default:
            return .json(.notFound, ["status": "failure", "description": "Not found"])
        }
    }

    private func login(_ request: SimpleRequest) -> SimpleResponse {
        guard let body = request.json, case .string(let userName)? = body["user_name"],
            let user = Self.users.first(where: { $0.userName == userName })
        else {
            return Self.failure("Unknown user")
        }
        if case .string(let password)? = body["password"] {
            guard password == user.password else { return Self.failure("Incorrect user name or password") }
            let refreshToken = UUID().uuidString.lowercased()
            self.refreshTokens.withLockedValue { $0[refreshToken] = user.userName }
            return self.tokens(
                for: user, refreshToken: refreshToken, description: "Login successful",
                dpopKey: body["dpop_jkt"]?.stringValue)
        }
        if case .string(let refreshToken)? = body["refreshtoken"] {
            guard self.refreshTokens.withLockedValue({ $0[refreshToken] }) == user.userName else {
                return Self.failure("Invalid refresh token")
            }
            return self.tokens(for: user, refreshToken: nil, description: "Session extended")
        }
        return Self.failure("Missing password or refreshtoken")
    }

    private func tokens(
        for user: User, refreshToken: String?, description: String, dpopKey: String? = nil
    ) -> SimpleResponse {
        var claims = self.accessTokenClaims(for: user, now: self.now)
        if let dpopKey { claims["cnf"] = ["jkt": .string(dpopKey)] }
        guard let accessToken = try? self.signer.sign(claims),
            let idToken = try? self.signer.sign(claims.merging(["token_use": "id"]))
        else {
            return SimpleResponse(status: .internalServerError)
        }
        var document: JSONObject = [
            "status": "success", "description": .string(description), "idtoken": .string(idToken),
            "accesstoken": .string(accessToken),
        ]
        if let refreshToken { document["refreshtoken"] = .string(refreshToken) }
        return .json(.ok, .object(document))
    }

    /// The claims of an access token (RainMaker's and the OpenID Provider's alike).
    func accessTokenClaims(for user: User, now: Int) -> JSONObject {
        [
            "iss": .string(self.issuer), "aud": .string(self.audience), "sub": .string(user.userID),
            "email": .string(user.userName), "iat": .number(JSONNumber(now)),
            "exp": .number(JSONNumber(now + self.tokenLifetimeSeconds)),
        ]
    }

    private func profile(_ request: SimpleRequest) -> SimpleResponse {
        guard let header = request.headers.first(name: "authorization"),
            let token = Self.token(inAuthorization: header),
            let user = self.verifiedUser(token)
        else {
            return .json(.unauthorized, ["status": "failure", "description": "Unauthorized"])
        }
        return .json(
            .ok,
            [
                "user_id": .string(user.userID), "user_name": .string(user.userName),
                "super_admin": .bool(user.superAdmin),
                "picture_url": "", "name": .string(user.name), "mfa": false, "phone_number": "+10000000000",
            ])
    }

    /// The user of an unexpired access token of this service.
    func verifiedUser(_ token: Substring) -> User? {
        guard let verified = self.verified(token, audiences: [self.audience]),
            verified.timeFailure(now: self.clockBox.withLockedValue { $0 }()) == nil
        else { return nil }
        return Self.users.first { $0.userID == verified.subject }
    }

    /// A token signed by this service with its `iss` and one of `audiences` (any, when nil),
    /// expired or not.
    func verified(_ token: Substring, audiences: [String]?) -> VerifiedToken? {
        guard
            let key = try? VerificationKey(
                kid: self.signer.kid, algorithm: .RS256, key: PublicKey(pem: self.signer.publicKeyPEM))
        else { return nil }
        let issuer = KeySnapshot.Issuer(
            issuer: self.issuer, audiences: audiences, leewaySeconds: 0, requiredClaims: ["sub"],
            keysByID: [self.signer.kid: key], keysWithoutID: [], hasRemoteKeys: false, remoteKeysFetchedAt: nil
        )
        var token = token
        let result = token.withUTF8 {
            TokenVerifier.verifySignature(
                token: UnsafeRawBufferPointer($0), keys: KeySnapshot(generation: 1, issuers: [issuer]))
        }
        guard case .success(let verified) = result else { return nil }
        return verified
    }

    /// `Bearer <jwt>` or RainMaker's bare `<jwt>`.
    private static func token(inAuthorization value: String) -> Substring? {
        let trimmed = value.drop { $0 == " " }
        let token = trimmed.lowercased().hasPrefix("bearer ") ? trimmed.dropFirst(7).drop { $0 == " " } : trimmed
        return token.isEmpty ? nil : token
    }

    private static func failure(_ description: String) -> SimpleResponse {
        .json(.unauthorized, ["status": "failure", "description": .string(description)])
    }
}

extension JSONObject {
    func merging(_ other: JSONObject) -> JSONObject {
        var result = self
        for entry in other.entries { result[entry.key] = entry.value }
        return result
    }
}
