import NIOHTTP1

/// The first step: the credential a request presents, from the configured token sources
/// (docs/authentication.md, "Token extraction"). A route with `auth: none` never looks; no
/// credential on an `optional` route is anonymous.
///
/// New kinds of credential (a session cookie, an API key) become further cases of `Outcome`,
/// each routed by the pipeline (`RequestAuthenticator`) to a step of its own.
struct CredentialExtraction {
    enum Outcome: Equatable {
        case anonymous
        case token(ExtractedToken)
        /// A browser session's handle (docs/browser-sign-in.md); a token wins over it.
        case session(SessionHandle)
        case refused(GatewayError)
    }

    let sources: [TokenSourceConfiguration]
    /// With `browserSignIn`: where the session cookie is read.
    var sessionCookies: SignInCookies? = nil

    func extract(from headers: HTTPHeaders, auth: RouteConfiguration.AuthMode) -> Outcome {
        guard auth != .none else { return .anonymous }
        switch TokenExtractor.extract(from: headers, sources: self.sources) {
        case .conflict:
            return .refused(.ambiguousToken)
        case .none:
            if let handle = self.sessionCookies?.sessionHandle(in: headers) { return .session(handle) }
            return auth == .optional ? .anonymous : .refused(.tokenMissing)
        case .found(let token):
            return .token(token)
        }
    }
}
