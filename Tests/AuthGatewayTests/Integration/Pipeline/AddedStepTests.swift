import Foundation
import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Adding a way in is one step file and one registration line (docs/architecture.md, "How to
/// add a way in"): a step of this file, registered after the standard ones exactly as they are
/// (`.then(…)` on `AuthenticationSteps.make`), runs for every request the gateway decides —
/// over HTTP/1.1, over HTTP/2, and for another proxy in authorizer mode — with nothing else
/// changed: its refusal is the client's answer, what it adds for the backend reaches it.
@Suite("A step added by its registration line runs in every mode", .awaitsCleanups, .timeLimit(.minutes(2)))
struct AddedStepTests {
    /// Refuses a request that asks for it (`X-Fake-Refuse`, 403); else hands the backend a
    /// header naming the caller it saw.
    struct FakeStep: AuthenticationStep {
        func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
            if request.headers.first(name: "x-fake-refuse") != nil { return .refuse(.forbidden("fake-step")) }
            guard let identity = state.identity else { return .next }
            let subject = identity.token.subject ?? "-"
            state.identity?.backendHeaders.append(("X-Fake-Step", "saw \(subject)"))
            return .next
        }
    }

    static let assembly = AuthenticationAssembly { context in
        RequestAuthenticator(
            steps: AuthenticationSteps.make(context)
                .then(FakeStep()),
            signInRedirect: nil, eventLoop: context.eventLoop)
    }

    static func start() async throws -> GatewayFixture {
        try await GatewayFixture.start(assembly: Self.assembly) { config in config["authorizer"] = [:] }
    }

    @Test func overHTTP1() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let allowed = try await gateway.send(.get("/x", token: TestKeys.token(subject: "ada")))
        #expect(allowed.status == 200)
        #expect(allowed.echoedHeader("x-fake-step") == ["saw ada"])
        let refused = try await gateway.send(
            .get("/x", token: TestKeys.token(subject: "ada"), headers: [("X-Fake-Refuse", "1")]))
        #expect(refused.status == 403)
        #expect(refused.json?["detail"]?.stringValue?.contains("fake-step") == true)
        #expect(gateway.backend.requestCount == 1)
    }

    @Test func overHTTP2() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "grace")
        let url = "http://127.0.0.1:\(gateway.port)/x"
        let allowed = HTTP2ClientTests.parse(
            try await HTTP2ClientTests.curl([
                "--http2-prior-knowledge", "--include", "-H", "Authorization: Bearer \(token)", url,
            ]).stdout)
        #expect(allowed.version == "HTTP/2")
        #expect(allowed.status == 200)
        let echoed = try #require(try JSONValue(parsing: allowed.body).objectValue)
        #expect(echoed["headers"]?["x-fake-step"]?.arrayValue == ["saw grace"])
        let refused = HTTP2ClientTests.parse(
            try await HTTP2ClientTests.curl([
                "--http2-prior-knowledge", "--include", "-H", "Authorization: Bearer \(token)", "-H",
                "X-Fake-Refuse: 1", url,
            ]).stdout)
        #expect(refused.status == 403)
        #expect(gateway.backend.requestCount == 1)
    }

    @Test func inAuthorizerMode() async throws {
        let gateway = try await Self.start()
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "lin")
        let forwardAuth: [(String, String)] = [
            ("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/x"), ("X-Forwarded-Host", "app.example"),
            ("Authorization", "Bearer \(token)"),
        ]
        let allowed = try await gateway.send(TestRequest(.GET, "/.gateway/authz/forward-auth", headers: forwardAuth))
        #expect(allowed.status == 200)
        #expect(allowed.header("X-Fake-Step") == "saw lin")
        let refused = try await gateway.send(
            TestRequest(.GET, "/.gateway/authz/forward-auth", headers: forwardAuth + [("X-Fake-Refuse", "1")]))
        #expect(refused.status == 403)
        #expect(gateway.backend.requestCount == 0)
    }
}
