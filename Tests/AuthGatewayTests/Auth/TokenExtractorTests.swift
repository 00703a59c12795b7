import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("TokenExtractor")
struct TokenExtractorTests {
    private let defaultSources = TokensConfiguration.defaultSources

    private func extract(
        _ headers: [(String, String)], sources: [TokenSourceConfiguration]? = nil
    ) -> TokenExtractor.Result {
        TokenExtractor.extract(from: HTTPHeaders(headers), sources: sources ?? defaultSources)
    }

    private func found(_ value: String, _ location: TokenLocation) -> TokenExtractor.Result {
        .found(ExtractedToken(value: value[...], location: location))
    }

    private let bearerHeader = TokenLocation.header(name: "Authorization", bearer: true)
    private let rawHeader = TokenLocation.header(name: "Authorization", bearer: false)

    @Test("Bearer scheme, in any case", arguments: ["Bearer", "bearer", "BEARER", "bEaReR"])
    func bearerAnyCase(_ scheme: String) {
        #expect(extract([("Authorization", "\(scheme) abc.def.ghi")]) == found("abc.def.ghi", bearerHeader))
    }

    @Test("the header name matches in any case; the location keeps the configured name")
    func headerNameCase() {
        #expect(extract([("authorization", "Bearer t1")]) == found("t1", bearerHeader))
        #expect(extract([("AUTHORIZATION", "t1")]) == found("t1", rawHeader))
    }

    @Test("surrounding whitespace is trimmed")
    func whitespace() {
        #expect(extract([("Authorization", "  Bearer   t1  ")]) == found("t1", bearerHeader))
        #expect(extract([("Authorization", "\tt1 ")]) == found("t1", rawHeader))
    }

    @Test("a raw token (RainMaker's Authorization: <token>)")
    func raw() {
        #expect(extract([("Authorization", "abc.def.ghi")]) == found("abc.def.ghi", rawHeader))
    }

    @Test("Basic and other schemes are not tokens")
    func basicIgnored() {
        #expect(extract([("Authorization", "Basic dXNlcjpwYXNz")]) == TokenExtractor.Result.none)
        #expect(extract([("Authorization", "Digest username=\"a\"")]) == TokenExtractor.Result.none)
        // ...and do not hide a token in a cookie.
        #expect(
            extract([("Authorization", "Basic dXNlcjpwYXNz"), ("Cookie", "access_token=c1")])
                == found("c1", .cookie(name: "access_token")))
    }

    @Test("an empty bearer is no token", arguments: ["Bearer", "Bearer ", "Bearer    ", "bearer\t", "", "   "])
    func emptyBearer(_ value: String) {
        #expect(extract([("Authorization", value)]) == TokenExtractor.Result.none)
    }

    @Test("only the configured schemes are accepted")
    func schemesRespected() {
        let bearerOnly: [TokenSourceConfiguration] = [.header(name: "Authorization", bearer: true, raw: false)]
        #expect(extract([("Authorization", "t1")], sources: bearerOnly) == TokenExtractor.Result.none)
        #expect(extract([("Authorization", "Bearer t1")], sources: bearerOnly) == found("t1", bearerHeader))
        let rawOnly: [TokenSourceConfiguration] = [.header(name: "Authorization", bearer: false, raw: true)]
        #expect(extract([("Authorization", "t1")], sources: rawOnly) == found("t1", rawHeader))
        #expect(extract([("Authorization", "Bearer t1")], sources: rawOnly) == TokenExtractor.Result.none)
    }

    @Test("a custom header source")
    func customHeader() {
        let sources: [TokenSourceConfiguration] = [.header(name: "X-Token", bearer: false, raw: true)]
        #expect(
            extract([("Authorization", "Bearer a"), ("x-token", "b")], sources: sources)
                == found("b", .header(name: "X-Token", bearer: false)))
    }

    @Test("a cookie")
    func cookie() {
        #expect(
            extract([("Cookie", "theme=dark; access_token=c1; lang=en")]) == found("c1", .cookie(name: "access_token")))
        #expect(
            extract([("Cookie", "theme=dark"), ("cookie", "access_token=\"c1\"")])
                == found("c1", .cookie(name: "access_token")))
    }

    @Test("cookie names match exactly")
    func cookieNameExact() {
        #expect(
            extract([("Cookie", "Access_Token=c1; access_token2=c2; xaccess_token=c3")]) == TokenExtractor.Result.none)
    }

    @Test("an empty cookie is no token")
    func emptyCookie() {
        #expect(extract([("Cookie", "access_token=")]) == TokenExtractor.Result.none)
        #expect(extract([("Cookie", "access_token=; access_token=c1")]) == found("c1", .cookie(name: "access_token")))
    }

    @Test("the same token twice is fine; the first place wins")
    func sameTokenTwice() {
        #expect(extract([("Authorization", "Bearer t1"), ("Cookie", "access_token=t1")]) == found("t1", bearerHeader))
        #expect(extract([("Authorization", "Bearer t1"), ("Authorization", "t1")]) == found("t1", bearerHeader))
        #expect(extract([("Cookie", "access_token=t1; access_token=t1")]) == found("t1", .cookie(name: "access_token")))
    }

    @Test("source order decides the location, not header order")
    func sourceOrder() {
        let cookieFirst: [TokenSourceConfiguration] = [
            .cookie(name: "access_token"), .header(name: "Authorization", bearer: true, raw: true),
        ]
        #expect(
            extract([("Authorization", "Bearer t1"), ("Cookie", "access_token=t1")], sources: cookieFirst)
                == found("t1", .cookie(name: "access_token")))
    }

    @Test("two different tokens are a conflict")
    func conflict() {
        #expect(extract([("Authorization", "Bearer t1"), ("Cookie", "access_token=t2")]) == .conflict)
        #expect(extract([("Authorization", "Bearer t1"), ("Authorization", "Bearer t2")]) == .conflict)
        #expect(extract([("Cookie", "access_token=t1"), ("Cookie", "access_token=t2")]) == .conflict)
        #expect(extract([("Cookie", "access_token=t1; access_token=t2")]) == .conflict)
        let twoHeaders: [TokenSourceConfiguration] = [
            .header(name: "Authorization", bearer: true, raw: false),
            .header(name: "X-Token", bearer: false, raw: true),
        ]
        #expect(extract([("Authorization", "Bearer t1"), ("X-Token", "t2")], sources: twoHeaders) == .conflict)
    }

    @Test("no sources, no token")
    func noSources() {
        #expect(extract([("Authorization", "Bearer t1")], sources: []) == TokenExtractor.Result.none)
    }

    @Test("token(inHeaderValue:) distinguishes the forms")
    func tokenInHeaderValue() {
        #expect(TokenExtractor.token(inHeaderValue: "Bearer x", bearer: true, raw: true)?.bearer == true)
        #expect(TokenExtractor.token(inHeaderValue: "x", bearer: true, raw: true)?.bearer == false)
        #expect(TokenExtractor.token(inHeaderValue: "Bearer", bearer: true, raw: true) == nil)
        #expect(TokenExtractor.token(inHeaderValue: "Bearerx", bearer: true, raw: false) == nil)
        #expect(TokenExtractor.token(inHeaderValue: "Bearerx", bearer: true, raw: true)?.value == "Bearerx")
    }
}

/// The `websocketProtocol` token source (docs/streams.md, "Browser WebSockets").
@Suite("TokenExtractor: websocketProtocol")
struct WebSocketProtocolTokenTests {
    static let prefix = "base64url.bearer.authorization.k8s.io."
    let sources: [TokenSourceConfiguration] = [
        .header(name: "Authorization", bearer: true, raw: false), .websocketProtocol(prefix: Self.prefix),
    ]

    func extract(_ headers: [(String, String)]) -> TokenExtractor.Result {
        TokenExtractor.extract(from: HTTPHeaders(headers), sources: self.sources)
    }

    @Test func theEntryWithThePrefixIsTheTokenInBase64url() {
        let entry = Self.prefix + Base64URL.encode(Array("abc.def.ghi".utf8))
        let expected = TokenExtractor.Result.found(
            ExtractedToken(value: "abc.def.ghi"[...], location: .websocketProtocol(prefix: Self.prefix)))
        #expect(self.extract([("Sec-WebSocket-Protocol", "chat, \(entry)")]) == expected)
        #expect(self.extract([("Sec-WebSocket-Protocol", "chat"), ("sec-websocket-protocol", entry)]) == expected)
        #expect(self.extract([("Sec-WebSocket-Protocol", "chat")]) == .none)
        #expect(self.extract([("Sec-WebSocket-Protocol", Self.prefix + "!!not-base64")]) == .none)
        // The same token in Authorization too is one token; another one is a conflict.
        #expect(
            self.extract([("Authorization", "Bearer abc.def.ghi"), ("Sec-WebSocket-Protocol", entry)]) != .conflict)
        #expect(self.extract([("Authorization", "Bearer other"), ("Sec-WebSocket-Protocol", entry)]) == .conflict)
    }

    @Test func theBackendNeverReceivesTheEntry() {
        #expect(HeaderRewriter.removingProtocols("\(Self.prefix)dG9r, chat", prefix: Self.prefix) == "chat")
        #expect(HeaderRewriter.removingProtocols("\(Self.prefix)dG9r", prefix: Self.prefix) == nil)
        #expect(HeaderRewriter.removingProtocols("a,b , c", prefix: Self.prefix) == "a, b, c")
    }
}
