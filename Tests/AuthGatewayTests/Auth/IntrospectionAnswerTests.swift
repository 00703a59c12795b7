import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

/// The introspection call's form and the reading of its answers (RFC 7662, docs/authentication.md).
@Suite("IntrospectionAnswer")
struct IntrospectionAnswerTests {
    static let now = 1_800_000_000.0

    static func configuration(
        _ change: (inout IntrospectionConfiguration) -> Void = { _ in }
    ) -> IntrospectionConfiguration {
        var configuration = IntrospectionConfiguration(
            url: try! UpstreamURL.parse("https://idp.test/oauth2/introspect?x=1").get())
        configuration.cacheSeconds = 60
        configuration.negativeCacheSeconds = 5
        change(&configuration)
        return configuration
    }

    static func answer(_ status: Int = 200, _ body: String) -> UpstreamResponse {
        UpstreamResponse(status: HTTPResponseStatus(statusCode: status), headers: [:], body: ByteBuffer(string: body))
    }

    static func outcome(
        _ body: String, status: Int = 200, _ change: (inout IntrospectionConfiguration) -> Void = { _ in }
    ) -> IntrospectionOutcome {
        IntrospectionAnswer.outcome(
            of: Self.answer(status, body), configuration: Self.configuration(change), now: Self.now)
    }

    @Test func theRequestIsTheRFC7662FormWithoutClientAuthentication() {
        let request = IntrospectionAnswer.request(for: "a b+c", configuration: Self.configuration())
        #expect(request.method == .POST)
        #expect(request.path == "?x=1" || request.path == "/oauth2/introspect?x=1")
        #expect(request.body.map { String(buffer: $0) } == "token=a+b%2Bc&token_type_hint=access_token")
        #expect(request.headers.first(name: "authorization") == nil)
    }

    @Test func anActiveAnswerIsKeptUntilExpOrCacheSeconds() {
        let claims = #""active": true, "sub": "alice", "scope": "a b""#
        guard case .active(let kept, let until) = Self.outcome("{\(claims), \"exp\": \(Int(Self.now) + 3600)}") else {
            Issue.record("not active")
            return
        }
        #expect(kept["sub"]?.stringValue == "alice")
        #expect(until == Self.now + 60)
        #expect(
            Self.outcome("{\(claims), \"exp\": \(Int(Self.now) + 10)}")
                == .active(
                    claims: [
                        "active": true, "sub": "alice", "scope": "a b", "exp": .number(JSONNumber(Int(Self.now) + 10)),
                    ], validUntil: Self.now + 10))
        guard case .active(_, let noExp) = Self.outcome("{\(claims)}") else {
            Issue.record("not active")
            return
        }
        #expect(noExp == Self.now + 60)
    }

    @Test func whatCountsAsInactive() {
        let inactive = IntrospectionOutcome.inactive(validUntil: Self.now + 5)
        #expect(Self.outcome(#"{"active": false}"#) == inactive)
        #expect(Self.outcome("{\"active\": true, \"exp\": \(Int(Self.now) - 1)}") == inactive)
        #expect(Self.outcome("{\"active\": true, \"exp\": \(Int(Self.now))}") == inactive)
        #expect(Self.outcome("{\"active\": true, \"nbf\": \(Int(Self.now) + 100)}") == inactive)
        #expect(Self.outcome(#"{"active": true, "exp": "soon"}"#) == inactive)
        #expect(Self.outcome(#"{"active": true, "iss": "https://other"}"#) { $0.issuer = "https://idp" } == inactive)
        #expect(Self.outcome(#"{"active": true, "aud": ["x", "y"]}"#) { $0.audiences = ["api"] } == inactive)
        #expect(Self.outcome(#"{"active": true, "aud": "api"}"#) { $0.audiences = ["api"] } != inactive)
        #expect(Self.outcome(#"{"active": true, "iss": "https://idp"}"#) { $0.issuer = "https://idp" } != inactive)
    }

    @Test func whatCountsAsUnavailable() {
        #expect(Self.outcome(#"{"active": true}"#, status: 500) == .unavailable)
        #expect(Self.outcome(#"{"error": "invalid_client"}"#, status: 401) == .unavailable)
        #expect(Self.outcome("<html></html>") == .unavailable)
        #expect(Self.outcome(#"{"active": "true"}"#) == .unavailable)
        #expect(Self.outcome(#"{"sub": "alice"}"#) == .unavailable)
        #expect(Self.outcome(#"[true]"#) == .unavailable)
    }

    @Test func onlyCurrentOutcomesAreAnswered() {
        #expect(IntrospectionOutcome.active(claims: [:], validUntil: 10).isCurrent(at: 9.9))
        #expect(!IntrospectionOutcome.active(claims: [:], validUntil: 10).isCurrent(at: 10))
        #expect(!IntrospectionOutcome.inactive(validUntil: 10).isCurrent(at: 10))
        #expect(!IntrospectionOutcome.unavailable.isCurrent(at: 0))
    }

    @Test(arguments: [
        ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", true),
        ("aaa.bbb.", true),
        ("aaa.bbb.ccc", true),
        ("opaque-token", false),
        ("a.b", false),
        ("a.b.c.d", false),
        (".b.c", false),
        ("a..c", false),
        ("a+b.c.d", false),
        ("a/b.c.d", false),
        ("", false),
    ])
    func theShapeOfACompactJWS(_ token: String, _ isJWS: Bool) {
        #expect(CompactJWS.hasCompactShape(token[...]) == isJWS)
    }
}
