import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The demo as `swift run auth-gateway demo` runs it (its auth service, echo backend and
/// configuration), driven by the walkthrough's requests on real sockets.
@Suite("Demo walkthrough (real sockets)", .awaitsCleanups, .timeLimit(.minutes(2)))
struct DemoTests {
    @Test func theWalkthroughsBearerAndDPoPStepsWork() async throws {
        let authService = try DemoAuthService(tokenLifetimeSeconds: 60)
        try await authService.start(group: TestGroup.shared)
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await authService.stop(); await backend.close()
        }
        guard
            case .object(let demo) = try JSONValue(
                parsing: DemoRunner.configurationText(gatewayPort: 0, authService: authService, backend: backend))
        else {
            Issue.record("the demo configuration is not a JSON object")
            return
        }
        let gateway = try await GatewayFixture.start(backend: backend) { config in config = demo }
        atTestEnd { await gateway.stop() }

        // Step 1-2: log in, call with the bearer token (identity headers from the profile).
        let plain = try await Self.login(authService, extra: [:])
        let served = try await DPoPTests.send(gateway, "/api/orders", [("Authorization", "Bearer \(plain)")])
        #expect(served.status == 200, "\(served.text)")
        #expect(served.echoedHeader("x-user-name") == ["alice@example.com"])

        // Step 9: a token bound to the client's key (made by Python joserfc) needs its proof.
        let key = try await DPoPTests.clientKey()
        let bound = try await Self.login(authService, extra: ["dpop_jkt": .string(key.jkt)])
        let url = "http://127.0.0.1:\(gateway.port)/api/orders"
        let proof = try await DPoPTests.proof(key, url: url, token: bound)
        let withProof = try await DPoPTests.send(
            gateway, "/api/orders", [("Authorization", "DPoP \(bound)"), ("DPoP", proof)])
        #expect(withProof.status == 200, "\(withProof.text)")
        #expect(withProof.echoedHeader("x-user-name") == ["alice@example.com"])
        let asBearer = try await DPoPTests.send(gateway, "/api/orders", [("Authorization", "Bearer \(bound)")])
        #expect(asBearer.status == 401, "a bound token without its proof")
        #expect(backend.requestCount == 2, "the refused request never reached the backend")
    }

    /// Step 1: POST /v1/login as alice; the access token of the answer.
    static func login(_ authService: DemoAuthService, extra: JSONObject) async throws -> String {
        var body: JSONObject = ["user_name": "alice@example.com", "password": "alice-password"]
        for entry in extra.entries { body[entry.key] = entry.value }
        let port = try #require(URL(string: authService.baseURL)?.port)
        let connection = try await TestConnection.connect(port: port)
        let answer = try await withCleanup({ await connection.close() }) {
            try await connection.send(
                TestRequest(
                    .POST, "/v1/login", headers: [("Content-Type", "application/json")],
                    body: JSONValue.object(body).jsonText))
        }
        return try #require(answer.json?["accesstoken"]?.stringValue, "\(answer.text)")
    }
}
