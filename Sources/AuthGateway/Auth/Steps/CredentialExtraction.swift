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
        case refused(GatewayError)
    }

    let sources: [TokenSourceConfiguration]

    func extract(from headers: HTTPHeaders, auth: RouteConfiguration.AuthMode) -> Outcome {
        guard auth != .none else { return .anonymous }
        switch TokenExtractor.extract(from: headers, sources: self.sources) {
        case .conflict:
            return .refused(.ambiguousToken)
        case .none:
            return auth == .optional ? .anonymous : .refused(.tokenMissing)
        case .found(let token):
            return .token(token)
        }
    }
}
