import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// DPoP through an authorizer call (docs/authorizer.md): the proof's `htm` and `htu` are checked
/// against the original request the proxy describes (its method, scheme, host and path), not
/// against the call to the gateway. Proofs come from Python joserfc (`DPoPTests.proofs`).
@Suite("Authorizer: DPoP against the original request (real sockets)", .awaitsCleanups)
struct AuthorizerDPoPTests {
    @Test func theProofMustMatchTheOriginalRequest() async throws {
        let gateway = try await DPoPTests.gateway { config in config["authorizer"] = [:] }
        atTestEnd { await gateway.stop() }
        let key = try await DPoPTests.clientKey()
        let token = DPoPTests.boundToken(key)
        let proof = try await DPoPTests.proof(key, "POST", url: "https://shop.example.com/orders/7", token: token)
        func ask(method: String, proof: String) async throws -> TestResponse {
            try await gateway.send(
                TestRequest(
                    .GET, AuthorizerHTTPTests.prefix + "auth-request",
                    headers: [
                        ("X-Original-Method", method), ("X-Original-URI", "/orders/7?expand=1"),
                        ("X-Forwarded-Host", "shop.example.com"), ("X-Forwarded-Proto", "https"),
                        ("Authorization", "DPoP \(token)"), ("DPoP", proof),
                    ]))
        }
        let allowed = try await ask(method: "POST", proof: proof)
        #expect(allowed.status == 200, "\(allowed.text)")
        #expect(allowed.header("X-User-Jkt") == key.jkt)
        // The same proof for another method of the original request: refused (401 for nginx).
        let otherMethod = try await ask(
            method: "GET",
            proof: try await DPoPTests.proof(key, "POST", url: "https://shop.example.com/orders/7", token: token))
        #expect(otherMethod.status == 401)
        #expect(DPoPTests.problem(otherMethod).type == "urn:auth-gateway:problem:dpop.invalid_proof")
        #expect(gateway.backend.requestCount == 0)
    }
}
