import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// Attacks on back-channel logout (docs/browser-sign-in.md, "Back-channel logout"): logout
/// tokens made by an independent implementation (Python joserfc: `Fixtures/jwt/logout_tokens.py`),
/// each valid but for one thing, posted to a gateway with a signed-in browser. Every one is
/// 400 `{"error":"invalid_request"}` and ends no session; the script's valid token then does.
@Suite("Logout token attacks (joserfc, real sockets)", .awaitsCleanups, .timeLimit(.minutes(3)))
struct LogoutTokenAttackTests {
    static let script = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/jwt/logout_tokens.py"
    ).path

    /// A second configured issuer (the tests' static key): its tokens are valid access tokens,
    /// never logout tokens for the sign-in issuer.
    static func addOtherIssuer(_ document: inout JSONObject) {
        guard case .object(var tokens)? = document["tokens"], case .array(var issuers)? = tokens["issuers"] else {
            return
        }
        issuers.append([
            "issuer": .string(TestKeys.issuer), "audiences": [.string(TestKeys.audience)], "leewaySeconds": 0,
            "keys": [["kid": "test-rs", "algorithm": "RS256", "publicKeyPEM": .string(TestKeys.rsa.publicKeyPEM)]],
        ])
        tokens["issuers"] = .array(issuers)
        document["tokens"] = .object(tokens)
    }

    static func privatePEM(_ signer: JWTSigner) throws -> String {
        guard case .rs256(let key) = signer.key else { throw AuthStepFailure("not an RSA signer") }
        return key.pemRepresentation
    }

    /// The script's tokens for `fixture`'s provider, for `sub`/`sid`, at the gateway's time.
    static func tokens(_ fixture: SignInFixture, sub: String, sid: String) async throws -> [String: String] {
        let python = try ExternalTool.require("python3", package: "python3")
        let spec: JSONObject = [
            "key_pem": .string(try Self.privatePEM(fixture.provider.signer)),
            "kid": .string(fixture.provider.signer.kid), "issuer": .string(fixture.provider.issuer),
            "client_id": "gateway", "sub": .string(sub), "sid": .string(sid),
            "now": .number(JSONNumber(Int(fixture.gateway.clock.now))),
            "other_key_pem": .string(try Self.privatePEM(TestKeys.rsa)), "other_kid": "test-rs",
            "other_issuer": .string(TestKeys.issuer),
        ]
        let result = try await ExternalTool.run(
            python, [Self.script], input: Data(JSONValue.object(spec).jsonText.utf8), timeout: .seconds(60))
        if result.stderr.contains("No module named") {
            Issue.record("Python joserfc is not installed: pip install joserfc (or run .ci/run, which installs it)")
        }
        let parsed = try JSONValue(parsing: result.stdout)
        var tokens: [String: String] = [:]
        for entry in parsed.objectValue?.entries ?? [] {
            if let token = entry.value.stringValue { tokens[entry.key] = token }
        }
        try #require(tokens["valid"] != nil, "logout_tokens.py: \(result.stderr)")
        return tokens
    }

    static func post(_ gateway: GatewayFixture, _ token: String) async throws -> TestResponse {
        try await gateway.send(
            TestRequest(
                .POST, "/.gateway/backchannel-logout",
                headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: "logout_token=\(FormEncoding.encode(token))"))
    }

    @Test("each logout token with one defect is 400 invalid_request and ends no session; the valid one ends it")
    func singleDefectTokens() async throws {
        let fixture = try await SignInFixture.start(configure: Self.addOtherIssuer)
        atTestEnd { await fixture.stop() }
        var browser = ScriptedBrowser()
        _ = try await fixture.signIn(&browser, to: "/")
        let sid = try #require(fixture.provider.providerSessions.first { $0.sub == "u-1001" }?.sid)
        let tokens = try await Self.tokens(fixture, sub: "u-1001", sid: sid)
        let expected = [
            "bad_signature", "alg_none", "hs256_public_pem", "hs256_public_der", "other_issuer", "other_issuer_claim",
            "nonce", "events_missing", "events_other_member", "events_not_object", "events_array",
            "events_member_not_object", "events_member_true", "no_sid_no_sub", "iat_too_old", "iat_future",
            "iat_missing", "expired", "no_jti", "empty_jti", "wrong_aud", "aud_list_without_client", "wrong_typ",
        ]
        #expect(Set(tokens.keys) == Set(expected + ["valid"]), "the script's cases changed")
        for name in expected {
            let token = try #require(tokens[name])
            let response = try await Self.post(fixture.gateway, token)
            #expect(response.status == 400, "\(name): \(response.status)")
            #expect(response.json == ["error": "invalid_request"], "\(name)")
            #expect(response.header("cache-control") == "no-store", "\(name)")
            let still = try await browser.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
            #expect(still.status == 200, "\(name) ended the session")
        }
        let metrics = try await fixture.metrics()
        #expect(!metrics.contains(#"auth_gateway_sign_outs_total{kind="backchannel"} 1"#))

        // The control: the same script's valid token is taken, and ends the session.
        let valid = try await Self.post(fixture.gateway, try #require(tokens["valid"]))
        #expect(valid.status == 200)
        let ended = try await browser.get(fixture.gateway, "/api/x", headers: [("Accept", "application/json")])
        #expect(ended.status == 401)
    }
}
