import Testing

@testable import AuthGateway

@Suite("UpstreamURL")
struct UpstreamURLTests {
    private func parse(_ text: String) -> UpstreamURL? {
        try? UpstreamURL.parse(text).get()
    }

    private func reason(_ text: String) -> String? {
        if case .failure(let error) = UpstreamURL.parse(text) { return error.description }
        return nil
    }

    @Test("scheme, host, port and path are split; default ports applied")
    func parsesParts() throws {
        let plain = try #require(parse("http://backend.internal:9100"))
        #expect(
            plain.scheme == .http && plain.host == "backend.internal" && plain.port == 9100 && plain.pathAndQuery == "")
        #expect(!plain.isTLS)

        let tls = try #require(parse("https://idp.example.com/realms/main/certs?x=1"))
        #expect(tls.scheme == .https && tls.port == 443 && tls.pathAndQuery == "/realms/main/certs?x=1")
        #expect(tls.isTLS)

        #expect(parse("http://h")?.port == 80)
        #expect(parse("HTTPS://H.Example.COM")?.host == "h.example.com")
        #expect(parse("HTTPS://H.Example.COM")?.scheme == .https)
    }

    @Test("IPv6 literals keep their colons and get brackets back in the Host header")
    func ipv6() throws {
        let url = try #require(parse("http://[::1]:8080/x"))
        #expect(url.host == "::1")
        #expect(url.port == 8080)
        #expect(url.hostHeader == "[::1]:8080")
        #expect(url.description == "http://[::1]:8080/x")
        #expect(parse("http://[fd00::1]")?.hostHeader == "[fd00::1]")
        #expect(reason("http://[::1") == "has an unterminated IPv6 address")
        #expect(reason("http://[::1]x") == "has an invalid host")
    }

    @Test("an IPv6 literal without brackets is refused, not misread as host and port")
    func unbracketedIPv6() {
        // Read naively, "fe80::1" is host "fe80:" with port 1.
        #expect(parse("http://fe80::1") == nil)
        #expect(parse("http://::1") == nil)
    }

    @Test("the Host header leaves out the scheme's default port only")
    func hostHeader() {
        #expect(parse("http://a:80")?.hostHeader == "a")
        #expect(parse("https://a:443")?.hostHeader == "a")
        #expect(parse("http://a:443")?.hostHeader == "a:443")
        #expect(parse("https://a:80")?.hostHeader == "a:80")
        #expect(parse("https://a:8443/p")?.description == "https://a:8443/p")
    }

    @Test(
        "invalid URLs are refused with a reason",
        arguments: [
            ("a:80", "must start with http:// or https://"),
            ("ws://a", "must start with http:// or https://"),
            ("http://", "has no host"),
            ("http://a:0", "port must be between 1 and 65535"),
            ("http://a:65536", "port must be between 1 and 65535"),
            ("http://a:-1", "port must be between 1 and 65535"),
            ("http://a:8o", "port must be between 1 and 65535"),
            ("http://u@a", "must not contain credentials"),
            ("http://a/#x", "must not contain a fragment"),
            ("http://a/b c", "must not contain spaces"),
            ("http://a%20b", "has an invalid host"),
            ("http://caf\u{E9}.example", "has an invalid host"),
        ]
    )
    func refuses(_ text: String, _ expected: String) {
        #expect(reason(text) == expected)
    }
}
