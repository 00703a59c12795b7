/// What a request presents to prove who it is (docs/authentication.md, "Token extraction"):
/// the one value `CredentialExtraction` returns, whatever the way in. Each case is some step's
/// business; the others hand it on.
enum Credential: Equatable, Sendable {
    /// Nothing: anonymous where the route allows it (`auth: none`, or `optional`).
    case none
    /// An access token from a configured source: a header (`Bearer`, raw, `DPoP`), a cookie, a
    /// WebSocket subprotocol — or, once `SessionAuthentication` looked it up, a browser
    /// session's (`location == .session`).
    case token(ExtractedToken)
    /// A browser session's handle, from its cookie (docs/browser-sign-in.md), not looked up yet.
    case session(SessionHandle)
    /// The value of the API key header (docs/policies.md, "API keys"), not looked up yet.
    case apiKey(String)
}
