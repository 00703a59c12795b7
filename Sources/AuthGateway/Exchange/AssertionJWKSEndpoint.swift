import NIOHTTP1

/// The JWKS of the identity-assertion keys (docs/assertions.md): every key of `keysFile` —
/// next, current and retired — as the loader built it once, so every replica given the same
/// file answers the same bytes. Served at `/.well-known/jwks.json` on the admin listener and at
/// `{browserSignIn.pathPrefix}jwks.json` (default `/.gateway/jwks.json`) on the main listener.
enum AssertionJWKSEndpoint {
    /// Verifiers cache it this long; a rotation waits at least as long before promoting a key.
    static let maxAgeSeconds = 300
    /// The admin listener's path.
    static let adminPath = "/.well-known/jwks.json"

    /// The main listener's path for `configuration`: beside the sign-in endpoints.
    static func mainPath(_ configuration: GatewayConfiguration) -> String {
        (configuration.browserSignIn?.pathPrefix ?? "/.gateway/") + "jwks.json"
    }

    /// The answer to a GET or HEAD of the JWKS; nil when the configuration signs no assertions
    /// (the path is then not the gateway's: 404 as any unknown path).
    static func response(_ configuration: GatewayConfiguration, method: HTTPMethod) -> LocalResponse? {
        guard let assertion = configuration.identityAssertion else { return nil }
        guard method == .GET || method == .HEAD else {
            var headers = HTTPHeaders()
            headers.add(name: "Allow", value: "GET, HEAD")
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            return LocalResponse(status: .methodNotAllowed, headers: headers, body: "", error: nil)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/jwk-set+json")
        headers.add(name: "Cache-Control", value: "max-age=\(Self.maxAgeSeconds)")
        return LocalResponse(status: .ok, headers: headers, body: assertion.keys.jwks, error: nil)
    }
}
