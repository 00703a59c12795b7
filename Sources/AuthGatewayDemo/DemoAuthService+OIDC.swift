import AuthGateway
import Foundation
import NIOCore
import NIOHTTP1

/// The demo auth service as an OpenID Provider (OpenID Connect Core, Discovery, RP-Initiated
/// Logout and Back-Channel Logout 1.0; OAuth 2.0 with PKCE), small but by the rules:
///
/// - `GET /.well-known/openid-configuration`: where everything is (`issuer` is `baseURL`);
/// - `GET /authorize`: the login form; its `POST` signs the browser in at the provider (the
///   `demo-idp-session` cookie) and sends it back to the client with a code (`+Authorize`);
/// - `POST /token`: code (+ PKCE verifier) or refresh token → tokens (`+Token`);
/// - `GET /userinfo`: the profile claims for a Bearer access token;
/// - `GET /end-session`: RP-initiated logout, then back-channel logout (`+Logout`);
/// - `POST /demo/logout?sub=…` or `?sid=…`: ends sessions as an admin would (`+Logout`).
extension DemoAuthService {
    static let sessionCookie = "demo-idp-session"
    /// How long a code may wait for the token endpoint.
    static let codeLifetimeSeconds = 60
    static let idTokenLifetimeSeconds = 300

    /// Registers `client`, or replaces the registration with its client id.
    public func register(_ client: DemoOIDCClient) {
        self.clientsBox.withLockedValue { $0[client.clientID] = client }
    }

    public var clients: [DemoOIDCClient] {
        self.clientsBox.withLockedValue { $0.values.sorted { $0.clientID < $1.clientID } }
    }

    public var discoveryURL: String { self.issuer + "/.well-known/openid-configuration" }
    public var authorizationEndpoint: String { self.issuer + "/authorize" }
    public var tokenEndpoint: String { self.issuer + "/token" }
    public var userinfoEndpoint: String { self.issuer + "/userinfo" }
    public var endSessionEndpoint: String { self.issuer + "/end-session" }
    public var jwksURL: String { self.issuer + "/.well-known/jwks.json" }

    func handle(_ request: SimpleRequest, on eventLoop: EventLoop) -> EventLoopFuture<SimpleResponse> {
        switch (request.method, request.path) {
        case (.GET, "/.well-known/openid-configuration"):
            return eventLoop.makeSucceededFuture(.json(.ok, self.discoveryDocument()))
        case (.GET, "/authorize"), (.POST, "/authorize"):
            return eventLoop.makeSucceededFuture(self.authorize(request))
        case (.POST, "/token"):
            return self.token(request, on: eventLoop)
        case (.GET, "/userinfo"), (.POST, "/userinfo"):
            return eventLoop.makeSucceededFuture(self.userinfo(request))
        case (.GET, "/end-session"), (.POST, "/end-session"):
            return self.endSession(request, on: eventLoop)
        case (.POST, "/demo/logout"):
            return self.adminLogout(request, on: eventLoop)
        default:
            return eventLoop.makeSucceededFuture(self.handle(request))
        }
    }

    func discoveryDocument() -> JSONValue {
        [
            "issuer": .string(self.issuer),
            "authorization_endpoint": .string(self.authorizationEndpoint),
            "token_endpoint": .string(self.tokenEndpoint),
            "userinfo_endpoint": .string(self.userinfoEndpoint),
            "jwks_uri": .string(self.jwksURL),
            "end_session_endpoint": .string(self.endSessionEndpoint),
            "backchannel_logout_supported": true,
            "backchannel_logout_session_supported": true,
            "code_challenge_methods_supported": ["S256"],
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "claims_supported": ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "sid", "name", "email"],
            "prompt_values_supported": ["none", "login"],
            "authorization_response_iss_parameter_supported": true,
        ]
    }

    /// The profile claims of the ID token and `/userinfo`.
    static func profileClaims(of user: User) -> JSONObject {
        [
            "name": .string(user.name), "email": .string(user.userName), "email_verified": true,
            "preferred_username": .string(user.userName),
        ]
    }

    /// The provider session the request's cookie names, if any (and its handle).
    func providerSession(of request: SimpleRequest) -> (handle: String, session: DemoOIDCState.Session)? {
        guard let handle = Self.cookie(Self.sessionCookie, in: request.headers) else { return nil }
        return self.state.withLockedValue { $0.session(handle: handle) }.map { (handle, $0) }
    }

    static func cookie(_ name: String, in headers: HTTPHeaders) -> String? {
        for header in headers["cookie"] {
            for crumb in header.split(separator: ";") {
                let pair = crumb.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0] == name { return String(pair[1]) }
            }
        }
        return nil
    }

    static func redirect(
        _ location: String, status: HTTPResponseStatus = .found, cookie: String? = nil
    )
        -> SimpleResponse
    {
        var headers: HTTPHeaders = ["Location": location, "Cache-Control": "no-store"]
        if let cookie { headers.add(name: "Set-Cookie", value: cookie) }
        return SimpleResponse(status: status, headers: headers)
    }

    static func sessionCookie(_ handle: String) -> String {
        "\(Self.sessionCookie)=\(handle); Path=/; HttpOnly; SameSite=Lax"
    }

    static let clearedSessionCookie = "\(sessionCookie)=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"

    /// The provider's clock in whole seconds (`useClock` lets a test share the gateway's).
    var now: Int { Int(self.clockBox.withLockedValue { $0 }()) }
}
