/// An authorization request (OpenID Connect Core 1.0 §3.1.2.1) that passed `/authorize`'s checks.
///
/// The order of the checks matters: until the client and its exact redirect URI are known,
/// a problem is shown on the provider's own page; only after that may an error travel back to
/// the client in the redirect (RFC 6749 §4.1.2.1), so the provider never redirects anywhere
/// that was not registered.
struct DemoAuthorizationRequest: Sendable, Equatable {
    var client: DemoOIDCClient
    var redirectURI: String
    var scope: String
    var state: String?
    var nonce: String?
    var codeChallenge: String
    /// `none`, `login`, … (Core §3.1.2.1); nil when absent.
    var prompt: String?

    enum Failure: Error, Equatable {
        /// No client or no registered redirect URI: an error page, never a redirect.
        case page(String)
        /// An OAuth error sent back to the client's (registered) redirect URI.
        case redirect(error: String, description: String, redirectURI: String, state: String?)
    }

    static func check(_ form: DemoForm, clients: [String: DemoOIDCClient]) -> Result<Self, Failure> {
        guard !form.malformed else { return .failure(.page("The request is not valid form encoding.")) }
        guard let clientID = form["client_id"], !form.repeated.contains("client_id") else {
            return .failure(.page("The request names no client (client_id)."))
        }
        guard let client = clients[clientID] else { return .failure(.page("The client is not registered.")) }
        guard let redirectURI = form["redirect_uri"], !form.repeated.contains("redirect_uri"),
            client.redirectURIs.contains(redirectURI)
        else {
            return .failure(.page("The redirect_uri is not registered for this client."))
        }
        let state = form["state"]
        func refuse(_ error: String, _ description: String) -> Result<Self, Failure> {
            .failure(.redirect(error: error, description: description, redirectURI: redirectURI, state: state))
        }
        if let name = form.repeated.sorted().first { return refuse("invalid_request", "\(name) is repeated") }
        guard let responseType = form["response_type"] else {
            return refuse("invalid_request", "response_type is required")
        }
        guard responseType == "code" else {
            return refuse("unsupported_response_type", "only the code flow is supported")
        }
        guard let scope = form["scope"], scope.split(separator: " ").contains("openid") else {
            return refuse("invalid_scope", "scope must contain openid")
        }
        guard let challenge = form["code_challenge"] else {
            return refuse("invalid_request", "code_challenge is required (PKCE)")
        }
        guard form["code_challenge_method"] == "S256" else {
            return refuse("invalid_request", "code_challenge_method must be S256")
        }
        guard PKCE.isValidChallenge(challenge) else {
            return refuse("invalid_request", "code_challenge is not a S256 challenge")
        }
        let prompt = form["prompt"]
        if let prompt, prompt.split(separator: " ").contains("none"), prompt != "none" {
            return refuse("invalid_request", "prompt=none cannot be combined")
        }
        return .success(
            DemoAuthorizationRequest(
                client: client, redirectURI: redirectURI, scope: scope, state: state, nonce: form["nonce"],
                codeChallenge: challenge, prompt: prompt))
    }

    /// The request's parameters, as the login form's hidden inputs carry them to its POST
    /// (checked again there); absent ones left out.
    var carriedValues: [(String, String)] {
        let values: [(String, String?)] = [
            ("response_type", "code"), ("client_id", self.client.clientID), ("redirect_uri", self.redirectURI),
            ("scope", self.scope), ("state", self.state), ("nonce", self.nonce),
            ("code_challenge", self.codeChallenge), ("code_challenge_method", "S256"), ("prompt", self.prompt),
        ]
        return values.compactMap { name, value in value.map { (name, $0) } }
    }
}
