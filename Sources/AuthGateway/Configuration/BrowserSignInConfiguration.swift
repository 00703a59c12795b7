/// `browserSignIn` (docs/browser-sign-in.md): browsers sign in through the gateway with the
/// OpenID Connect authorization code flow (PKCE and nonce always), and hold a server-side
/// session behind a handle cookie.
public struct BrowserSignInConfiguration: Sendable, Equatable {
    /// An issuer of `tokens.issuers` with `discovery: true`: its `authorization_endpoint`,
    /// `token_endpoint`, `end_session_endpoint` and keys are used.
    public var issuer: String
    public var clientID: String
    /// Printed as `<redacted>` (`Secret`).
    public var clientSecret: Secret?
    public var clientAuthentication: RefreshConfiguration.ClientAuthentication = .basic
    public var scopes: [String] = Self.defaultScopes
    /// `scheme://authority` as browsers reach the gateway (no path); `http` only on loopback.
    public var publicBaseURL: String
    /// Where the gateway's own sign-in endpoints live; starts and ends with `/`.
    public var pathPrefix = "/.gateway/"
    public var sessionIdleSeconds = 28_800
    public var sessionMaxSeconds = 604_800
    /// Where a browser lands after signing out (a path on `publicBaseURL`).
    public var postSignOutPath = "/"
    /// Sessions this process holds at most; the least recently used beyond it are forgotten
    /// (with `sharedState` they are read back from the database on their next request).
    public var maxSessions = 100_000

    public static let defaultScopes = ["openid", "profile", "email"]

    public init(issuer: String, clientID: String, publicBaseURL: String) {
        self.issuer = issuer
        self.clientID = clientID
        self.publicBaseURL = publicBaseURL
    }

    /// `https` public base: `__Host-` cookies with `Secure`.
    public var isSecure: Bool { self.publicBaseURL.hasPrefix("https://") }

    /// The session cookie's name: `__Host-gateway-session`, or `gateway-session` over `http`
    /// (browsers refuse `__Host-` cookies without `Secure`).
    public var sessionCookieName: String { (self.isSecure ? "__Host-" : "") + "gateway-session" }

    /// The prefix of the flow cookies' names (`<prefix><flow id>`).
    public var flowCookiePrefix: String { (self.isSecure ? "__Host-" : "") + "gateway-flow-" }

    /// The redirect URI to register at the provider.
    public var redirectURI: String { self.publicBaseURL + self.pathPrefix + "callback" }

    /// The back-channel logout URI to register at the provider.
    public var backchannelLogoutURI: String { self.publicBaseURL + self.pathPrefix + "backchannel-logout" }

    /// The post-logout redirect URI to register at the provider.
    public var postLogoutRedirectURI: String { self.publicBaseURL + self.postSignOutPath }
}
