/// A relying party registered at the demo's OpenID Provider: what a real provider's admin
/// console asks for when an application is added.
///
/// Every URI is compared exactly (no prefix or wildcard matching): a redirect to anything not
/// registered here is never sent, which is what keeps the provider from being an open redirect.
public struct DemoOIDCClient: Sendable, Equatable {
    public var clientID: String
    /// Checked for `client_secret_basic` and `client_secret_post` alike.
    public var clientSecret: String
    /// Where `/authorize` may send the browser back with a code.
    public var redirectURIs: [String]
    /// Where `/end-session` may send the browser after signing out.
    public var postLogoutRedirectURIs: [String]
    /// Where logout tokens are posted when a session that signed in to this client ends
    /// (OpenID Connect Back-Channel Logout 1.0); nil: none are sent.
    public var backChannelLogoutURI: String?

    public init(
        clientID: String, clientSecret: String, redirectURIs: [String], postLogoutRedirectURIs: [String] = [],
        backChannelLogoutURI: String? = nil
    ) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.redirectURIs = redirectURIs
        self.postLogoutRedirectURIs = postLogoutRedirectURIs
        self.backChannelLogoutURI = backChannelLogoutURI
    }

    public static let gatewayClientID = "gateway"
    public static let gatewaySecret = "gateway-secret"

    /// The registration of an auth-gateway whose `browserSignIn` has this `publicBaseURL`,
    /// `pathPrefix` and `postSignOutPath`: its callback, sign-out landing page and
    /// back-channel logout endpoint (docs/browser-sign-in.md).
    public static func gateway(
        publicBaseURL: String, pathPrefix: String = "/.gateway/", postSignOutPath: String = "/",
        clientID: String = Self.gatewayClientID, clientSecret: String = Self.gatewaySecret
    ) -> DemoOIDCClient {
        let base = publicBaseURL.hasSuffix("/") ? String(publicBaseURL.dropLast()) : publicBaseURL
        return DemoOIDCClient(
            clientID: clientID, clientSecret: clientSecret,
            redirectURIs: [base + pathPrefix + "callback"],
            postLogoutRedirectURIs: [base + postSignOutPath],
            backChannelLogoutURI: base + pathPrefix + "backchannel-logout")
    }
}
