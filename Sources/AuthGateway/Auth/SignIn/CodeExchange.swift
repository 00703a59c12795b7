import NIOCore
import NIOHTTP1

/// The callback's call to the provider's `token_endpoint` (docs/browser-sign-in.md): the
/// authorization code, the redirect URI and the PKCE verifier, with the client authenticated as
/// for refresh (HTTP Basic or the form).
enum CodeExchange {
    /// The provider's answer.
    enum Outcome: Sendable, Equatable {
        case tokens(idToken: String, accessToken: String, refreshToken: String?)
        /// 4xx, an OAuth error, or a 2xx without the tokens: this code will not work again.
        case refused
        /// Unreachable, slow, 5xx: the browser may try again (503).
        case unavailable
    }

    static func request(
        code: String, verifier: String, configuration: BrowserSignInConfiguration, path: String
    ) -> UpstreamRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        var form = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", configuration.redirectURI),
            ("code_verifier", verifier),
        ]
        FormEncoding.authenticateClient(
            configuration.clientID, secret: configuration.clientSecret, as: configuration.clientAuthentication,
            headers: &headers, form: &form)
        return UpstreamRequest(
            method: .POST, path: path, headers: headers, body: ByteBuffer(string: FormEncoding.body(form)))
    }

    static func outcome(of response: UpstreamResponse) -> Outcome {
        switch response.status.code {
        case 200..<300:
            guard case .object(let document)? = try? JSONValue(parsing: String(buffer: response.body)),
                case .string(let idToken)? = document["id_token"], !idToken.isEmpty,
                case .string(let accessToken)? = document["access_token"], !accessToken.isEmpty
            else { return .refused }
            let refreshToken = document["refresh_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            return .tokens(idToken: idToken, accessToken: accessToken, refreshToken: refreshToken)
        case 400..<500 where response.status.code != 429:
            return .refused
        default:
            return .unavailable
        }
    }

    /// Exchanges `code` at `endpoint`; never fails (a failed call is `unavailable`).
    static func exchange(
        code: String, verifier: String, configuration: BrowserSignInConfiguration, endpoint: UpstreamEndpoint
    ) -> EventLoopFuture<Outcome> {
        let request = Self.request(code: code, verifier: verifier, configuration: configuration, path: endpoint.path)
        return endpoint.client.execute(request).map(Self.outcome(of:)).recover { _ in .unavailable }
    }
}
