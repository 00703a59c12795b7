import Testing

import AuthGateway
@testable import AuthGatewayDemo

/// `/authorize`'s checks, in order: no redirect before the client and its exact redirect URI
/// are known; OAuth errors after that.
@Suite("Demo OpenID Provider: authorization requests")
struct DemoAuthorizationRequestTests {
    static let client = DemoOIDCClient(
        clientID: "gateway", clientSecret: "s", redirectURIs: ["http://127.0.0.1:1/cb"])
    static let challenge = PKCE.challenge(for: String(repeating: "v", count: 43))

    static func check(_ query: String) -> Result<DemoAuthorizationRequest, DemoAuthorizationRequest.Failure> {
        DemoAuthorizationRequest.check(DemoForm(encoded: query), clients: ["gateway": Self.client])
    }

    static let valid =
        "response_type=code&client_id=gateway&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb&scope=openid+email"
        + "&state=s&nonce=n&code_challenge=\(challenge)&code_challenge_method=S256"

    @Test func aCompleteRequestPasses() throws {
        let request = try Self.check(Self.valid).get()
        #expect(request.scope == "openid email" && request.state == "s" && request.nonce == "n")
        #expect(request.codeChallenge == Self.challenge)
        #expect(
            DemoForm(encoded: DemoForm.encode(request.carriedValues)).fields == DemoForm(encoded: Self.valid).fields,
            "the login form carries the request unchanged")
    }

    @Test(arguments: [
        (
            "no client",
            DemoAuthorizationRequestTests.valid.replacingOccurrences(of: "client_id=gateway", with: "client_id=")
        ),
        (
            "an unknown client",
            DemoAuthorizationRequestTests.valid.replacingOccurrences(of: "client_id=gateway", with: "client_id=evil")
        ),
        ("a repeated client", DemoAuthorizationRequestTests.valid + "&client_id=gateway"),
        (
            "no redirect URI",
            DemoAuthorizationRequestTests.valid.replacingOccurrences(of: "redirect_uri=", with: "redirect=")
        ),
        (
            "a longer redirect URI",
            DemoAuthorizationRequestTests.valid.replacingOccurrences(of: "%2Fcb", with: "%2Fcb%2Fx")
        ),
        (
            "another origin",
            DemoAuthorizationRequestTests.valid.replacingOccurrences(of: "127.0.0.1", with: "evil.example")
        ),
        ("malformed encoding", DemoAuthorizationRequestTests.valid + "&x=%zz"),
    ])
    func withoutAKnownClientAndRedirectURIThereIsOnlyAPage(_ name: String, _ query: String) {
        guard case .failure(.page) = Self.check(query) else {
            Issue.record("\(name): \(Self.check(query))")
            return
        }
    }

    @Test(arguments: [
        ("code_challenge=\(DemoAuthorizationRequestTests.challenge)&", "", "invalid_request"),
        ("S256", "plain", "invalid_request"),
        ("code_challenge=\(DemoAuthorizationRequestTests.challenge)", "code_challenge=short", "invalid_request"),
        ("scope=openid+email", "scope=email", "invalid_scope"),
        ("response_type=code", "response_type=token", "unsupported_response_type"),
        ("response_type=code&", "", "invalid_request"),
        ("state=s", "state=s&nonce=again", "invalid_request"),
        ("state=s", "state=s&prompt=none+login", "invalid_request"),
    ])
    func otherProblemsGoBackToTheClientWithItsState(_ from: String, _ to: String, _ error: String) {
        let result = Self.check(Self.valid.replacingOccurrences(of: from, with: to))
        #expect(
            result
                == .failure(
                    .redirect(
                        error: error, description: Self.description(result), redirectURI: "http://127.0.0.1:1/cb",
                        state: "s")))
    }

    static func description(_ result: Result<DemoAuthorizationRequest, DemoAuthorizationRequest.Failure>) -> String {
        if case .failure(.redirect(_, let description, _, _)) = result { return description }
        return ""
    }

    @Test func formsDecodePlusAndPercentAndNoteRepeatsAndMalformedParts() {
        let form = DemoForm(encoded: "a=x+y%2B%26&b=&c=1&c=2&bad=%E")
        #expect(form["a"] == "x y+&")
        #expect(form["b"] == nil, "empty is absent")
        #expect(form.repeated == ["c"])
        #expect(form.malformed)
        #expect(DemoForm.encode([("k", "a b&c=d/é")]) == "k=a+b%26c%3Dd%2F%C3%A9")
        #expect(DemoForm.appending([("code", "1")], to: "https://rp/cb?x=1") == "https://rp/cb?x=1&code=1")
    }

    @Test func htmlEscapingCoversElementsAndBothQuotes() {
        #expect(
            HTML.escape(#"<a href="x" onclick='y'>&</a>"#)
                == "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;")
    }
}
