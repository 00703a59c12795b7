import NIOHTTP1

/// The first step: the one credential a request presents (docs/authentication.md, "Token
/// extraction"), as a `Credential` the later steps each take their case of. A route with
/// `auth: none` never looks. The API key header, when configured and present, is the
/// credential (with an access token too: 400 `apikey.ambiguous`); else the configured token
/// sources (two different tokens: 400); else the browser session cookie; else nothing —
/// anonymous on an `optional` route, 401 on a `required` one.
struct CredentialExtraction: AuthenticationStep {
    let sources: [TokenSourceConfiguration]
    /// With `browserSignIn`: where the session cookie is read.
    var sessionCookies: SignInCookies? = nil
    /// With `tokens.apiKeys`: the key's header name.
    var apiKeyHeader: String? = nil

    init(sources: [TokenSourceConfiguration], sessionCookies: SignInCookies? = nil, apiKeyHeader: String? = nil) {
        self.sources = sources
        self.sessionCookies = sessionCookies
        self.apiKeyHeader = apiKeyHeader
    }

    init(_ context: StepContext) {
        self.init(
            sources: context.configuration.tokens.sources,
            sessionCookies: context.features.signIn?.browserSignIn.cookies,
            apiKeyHeader: context.features.apiKeys?.header)
    }

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        switch self.extract(from: request.headers, auth: request.route.auth) {
        case .success(let credential):
            state.credential = credential
            return .next
        case .failure(let error):
            return .refuse(error)
        }
    }

    func extract(from headers: HTTPHeaders, auth: RouteConfiguration.AuthMode) -> Result<Credential, GatewayError> {
        guard auth != .none else { return .success(.none) }
        let tokens = TokenExtractor.extract(from: headers, sources: self.sources)
        if let header = self.apiKeyHeader, let key = Self.apiKey(in: headers, header: header) {
            guard tokens == .none else { return .failure(.apiKeyAmbiguous) }
            // A key sent twice is not one key: which line speaks is not guessed.
            return key.lines == 1 ? .success(.apiKey(key.value)) : .failure(.apiKeyInvalid)
        }
        switch tokens {
        case .conflict:
            return .failure(.ambiguousToken)
        case .none:
            if let handle = self.sessionCookies?.sessionHandle(in: headers) { return .success(.session(handle)) }
            return auth == .optional ? .success(.none) : .failure(.tokenMissing)
        case .found(let token):
            return .success(.token(token))
        }
    }

    /// The key header's (last) value and how many lines carried it; nil when absent.
    private static func apiKey(in headers: HTTPHeaders, header: String) -> (value: String, lines: Int)? {
        var value: String?
        var lines = 0
        for (name, line) in headers where ASCII.equalsIgnoringCase(name, header) {
            value = line
            lines += 1
        }
        return value.map { ($0, lines) }
    }
}
