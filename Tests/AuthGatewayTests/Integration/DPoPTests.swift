import Foundation
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// DPoP-bound tokens (RFC 9449, docs/authentication.md) with proofs made live by an independent
/// implementation (Python joserfc: `Fixtures/dpop/dpop_proofs.py`), on real sockets. Every
/// failed check is its own case and is never forwarded.
@Suite("DPoP proofs from joserfc (real sockets)", .timeLimit(.minutes(3)))
struct DPoPTests {
    static let script = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/dpop/dpop_proofs.py"
    ).path

    struct Proof {
        var proof: String
        var jkt: String
        var privateJWK: JSONValue
    }

    /// Proofs for `scenarios` (see the script's documentation), in order.
    static func proofs(_ scenarios: [JSONObject]) async throws -> [Proof] {
        let python = try ExternalTool.require("python3", package: "python3")
        let input = Data(JSONValue.array(scenarios.map(JSONValue.object)).jsonText.utf8)
        let result = try await ExternalTool.run(python, [Self.script], input: input)
        if result.stderr.contains("No module named 'joserfc'") {
            Issue.record("Python joserfc is not installed: pip install joserfc (or run .ci/run, which installs it)")
        }
        let parsed = try JSONValue(parsing: result.stdout)
        let proofs: [Proof] = (parsed.arrayValue ?? []).compactMap { entry in
            guard let proof = entry["proof"]?.stringValue, let jkt = entry["jkt"]?.stringValue,
                let jwk = entry["private_jwk"]
            else { return nil }
            return Proof(proof: proof, jkt: jkt, privateJWK: jwk)
        }
        try #require(proofs.count == scenarios.count, "dpop_proofs.py: \(result.stderr)")
        return proofs
    }

    /// A client key (its private JWK and thumbprint).
    static func clientKey(_ alg: String = "ES256") async throws -> Proof {
        try await Self.proofs([["alg": .string(alg), "htu": "http://unused/", "iat": 0]])[0]
    }

    static func now() -> JSONValue { .number(JSONNumber(Int(Date().timeIntervalSince1970))) }

    static func gateway(configure: (inout JSONObject) -> Void = { _ in }) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Jkt": "dpop.jkt"]
            config["routes"] = [
                ["name": "strict", "pathPrefix": "/strict/", "backend": "api", "dpop": "required"],
                ["name": "relaxed", "pathPrefix": "/relaxed/", "backend": "api", "dpop": "off"],
                ["name": "forwarding", "pathPrefix": "/forward/", "backend": "api", "forwardDPoPProof": true],
                ["name": "default", "pathPrefix": "/", "backend": "api"],
            ]
            configure(&config)
        }
    }

    /// A token bound to `key`.
    static func boundToken(_ key: Proof, subject: String = "dpop-user") -> String {
        TestKeys.token(subject: subject, extra: ["cnf": ["jkt": .string(key.jkt)]])
    }

    /// Runs `body` with a gateway, a client key and a token bound to it.
    static func withBoundClient(
        configure: (inout JSONObject) -> Void = { _ in }, _ body: (GatewayFixture, Proof, String) async throws -> Void
    ) async throws {
        let gateway = try await Self.gateway(configure: configure)
        try await withCleanup({ await gateway.stop() }) {
            let key = try await Self.clientKey()
            try await body(gateway, key, Self.boundToken(key))
        }
    }

    /// A proof by `key` for `method url` and `token`, with `changes` applied to the scenario.
    static func proof(
        _ key: Proof, _ method: String = "GET", url: String, token: String, _ changes: JSONObject = [:]
    ) async throws -> String {
        var scenario: JSONObject = [
            "use_jwk": key.privateJWK, "htm": .string(method), "htu": .string(url), "iat": Self.now(),
            "access_token": .string(token),
        ]
        for entry in changes.entries { scenario[entry.key] = entry.value }
        return try await Self.proofs([scenario])[0].proof
    }

    /// A GET with `Host` as a client of `http://127.0.0.1:<port>` sends it.
    static func send(
        _ gateway: GatewayFixture, _ path: String, _ headers: [(String, String)]
    ) async throws -> TestResponse {
        try await gateway.send(TestRequest(.GET, path, headers: [("Host", "127.0.0.1:\(gateway.port)")] + headers))
    }

    static func problem(_ response: TestResponse) -> (type: String?, detail: String?) {
        let document = try? JSONValue(parsing: response.text)
        return (document?["type"]?.stringValue, document?["detail"]?.stringValue)
    }

    @Test func aBoundTokenWithAValidProofIsForwardedWithoutTheProof() async throws {
        try await Self.withBoundClient { gateway, key, token in
            let url = "http://127.0.0.1:\(gateway.port)/orders/7"
            let proof = try await Self.proof(key, url: url, token: token)
            let response = try await Self.send(
                gateway, "/orders/7?expand=1", [("Authorization", "DPoP \(token)"), ("DPoP", proof)])
            #expect(response.status == 200, "\(response.text)")
            let headers = try JSONValue(parsing: response.text)["headers"]
            #expect(headers?["x-user-jkt"]?.arrayValue?.first?.stringValue == key.jkt)
            #expect(headers?["dpop"] == nil)
            #expect(headers?["authorization"]?.arrayValue?.first?.stringValue == "DPoP \(token)")

            // A route that forwards the proof; POST with a body.
            let postProof = try await Self.proof(
                key, "POST", url: "http://127.0.0.1:\(gateway.port)/forward/x", token: token)
            let forwarded = try await gateway.send(
                TestRequest(
                    .POST, "/forward/x",
                    headers: [
                        ("Host", "127.0.0.1:\(gateway.port)"), ("Authorization", "DPoP \(token)"), ("DPoP", postProof),
                    ], body: "{}")
            )
            #expect(forwarded.status == 200, "\(forwarded.text)")
            #expect(
                try JSONValue(parsing: forwarded.text)["headers"]?["dpop"]?.arrayValue?.first?.stringValue == postProof)
        }
    }

    /// Replay on the same instance: the second use of a proof is refused, never forwarded.
    @Test func aReplayedProofIsRefused() async throws {
        try await Self.withBoundClient { gateway, key, token in
            let proof = try await Self.proof(key, url: "http://127.0.0.1:\(gateway.port)/r", token: token)
            let headers = [("Authorization", "DPoP \(token)"), ("DPoP", proof)]
            #expect(try await Self.send(gateway, "/r", headers).status == 200)
            let replay = try await Self.send(gateway, "/r", headers)
            #expect(replay.status == 401)
            #expect(Self.problem(replay).type == "urn:auth-gateway:problem:dpop.invalid_proof")
            #expect(Self.problem(replay).detail?.contains("jti") == true)
            #expect(replay.header("www-authenticate")?.hasPrefix("DPoP error=\"invalid_dpop_proof\"") == true)
            #expect(replay.header("www-authenticate")?.contains("algs=\"ES256 RS256 PS256 EdDSA\"") == true)
            #expect(gateway.backend.requestCount == 1)
        }
    }

    /// Each failed check: 401 `dpop.invalid_proof` naming the check; nothing forwarded.
    /// (the check named, the scenario's changes as JSON; "QUERY" stands for the URL plus a
    /// query, "FUTURE" for an `iat` an hour ahead).
    static let failingChecks: [(String, String)] = [
        ("htm", #"{"htm": "POST"}"#),
        ("htm", #"{"htm": "get"}"#),
        ("htu", #"{"htu": "http://127.0.0.1:1/other"}"#),
        ("htu", #"{"htu": "QUERY"}"#),
        ("iat", #"{"iat": 1000000000}"#),
        ("iat", #"{"iat": "FUTURE"}"#),
        ("ath", #"{"access_token": "another-token"}"#),
        ("ath", #"{"omit": ["ath"]}"#),
        ("jti", #"{"omit": ["jti"]}"#),
        ("typ", #"{"typ": "JWT"}"#),
        ("jwk has private members", #"{"private_jwk": true}"#),
        ("signature", #"{"tamper": true}"#),
    ]

    @Test(arguments: Self.failingChecks)
    func aProofFailingOneCheckIsRefused(_ check: String, _ changesJSON: String) async throws {
        try await Self.withBoundClient { gateway, key, token in
            let url = "http://127.0.0.1:\(gateway.port)/checks"
            var changes = try #require(try JSONValue(parsing: changesJSON).objectValue)
            if changes["htu"] == .string("QUERY") { changes["htu"] = .string(url + "?a=1") }
            if changes["iat"] == .string("FUTURE") {
                changes["iat"] = .number(JSONNumber(Int(Date().timeIntervalSince1970) + 3600))
            }
            let proof = try await Self.proof(key, url: url, token: token, changes)
            let response = try await Self.send(
                gateway, "/checks", [("Authorization", "DPoP \(token)"), ("DPoP", proof)])
            #expect(response.status == 401)
            #expect(Self.problem(response).type == "urn:auth-gateway:problem:dpop.invalid_proof")
            #expect(Self.problem(response).detail == "The DPoP proof failed its check: \(check)")
            #expect(gateway.backend.requestCount == 0)
        }
    }

    @Test func aProofByAnotherKeyOrAnAlgorithmOffTheListIsRefused() async throws {
        try await Self.withBoundClient { gateway, key, token in
            let url = "http://127.0.0.1:\(gateway.port)/keys"
            let other = try await Self.clientKey()
            let byOther = try await Self.proof(other, url: url, token: token)
            let wrongKey = try await Self.send(
                gateway, "/keys", [("Authorization", "DPoP \(token)"), ("DPoP", byOther)])
            #expect(Self.problem(wrongKey).detail == "The DPoP proof failed its check: jkt")
            // ES384 is a valid JWS algorithm but not in the default list.
            let es384 = try await Self.proofs([
                ["alg": "ES384", "htu": .string(url), "iat": Self.now(), "access_token": .string(token)]
            ])[0]
            let refused = try await Self.send(
                gateway, "/keys", [("Authorization", "DPoP \(Self.boundToken(es384))"), ("DPoP", es384.proof)])
            #expect(Self.problem(refused).detail == "The DPoP proof failed its check: alg")
            #expect(gateway.backend.requestCount == 0)
        }
    }

    /// RS256, PS256 and EdDSA proofs verify as ES256 ones do.
    @Test(arguments: ["RS256", "PS256", "EdDSA"])
    func everyDefaultAlgorithmVerifies(_ alg: String) async throws {
        try await Self.withBoundClient { gateway, _, _ in
            let key = try await Self.clientKey(alg)
            let token = Self.boundToken(key)
            let proof = try await Self.proof(
                key, url: "http://127.0.0.1:\(gateway.port)/alg", token: token, ["alg": .string(alg)])
            #expect(
                try await Self.send(gateway, "/alg", [("Authorization", "DPoP \(token)"), ("DPoP", proof)]).status
                    == 200)
        }
    }

    /// A bound token as Bearer, in a cookie, or without a proof: 401 `dpop.required` with a
    /// challenge that has no error; two proofs: invalid.
    @Test func aBoundTokenWithoutTheDPoPSchemeOrProofIsRefused() async throws {
        try await Self.withBoundClient { gateway, key, token in
            let url = "http://127.0.0.1:\(gateway.port)/scheme"
            let proof = try await Self.proof(key, url: url, token: token)
            for headers in [
                [("Authorization", "Bearer \(token)"), ("DPoP", proof)],
                [("Cookie", "access_token=\(token)"), ("DPoP", proof)],
                [("Authorization", "DPoP \(token)")],
            ] {
                let response = try await Self.send(gateway, "/scheme", headers)
                #expect(response.status == 401)
                #expect(Self.problem(response).type == "urn:auth-gateway:problem:dpop.required")
                #expect(response.header("www-authenticate") == "DPoP algs=\"ES256 RS256 PS256 EdDSA\"")
            }
            let twice = try await Self.send(
                gateway, "/scheme", [("Authorization", "DPoP \(token)"), ("DPoP", proof), ("DPoP", proof)])
            #expect(Self.problem(twice).detail == "The DPoP proof failed its check: more than one DPoP header")
            #expect(gateway.backend.requestCount == 0)
        }
    }

    /// `required` refuses unbound tokens; `off` ignores the binding; an unbound token is a
    /// bearer token on the default route (and may not use the DPoP scheme).
    @Test func routeModes() async throws {
        try await Self.withBoundClient { gateway, key, token in
            let plain = TestKeys.token(subject: "bearer-user")
            let strict = try await Self.send(gateway, "/strict/a", [("Authorization", "Bearer \(plain)")])
            #expect(Self.problem(strict).type == "urn:auth-gateway:problem:dpop.required")
            #expect(try await Self.send(gateway, "/relaxed/a", [("Authorization", "Bearer \(token)")]).status == 200)
            #expect(try await Self.send(gateway, "/plain", [("Authorization", "Bearer \(plain)")]).status == 200)
            let unboundAsDPoP = try await Self.send(gateway, "/plain", [("Authorization", "DPoP \(plain)")])
            #expect(Self.problem(unboundAsDPoP).type == "urn:auth-gateway:problem:dpop.invalid_proof")
            let proof = try await Self.proof(key, url: "http://127.0.0.1:\(gateway.port)/strict/b", token: token)
            #expect(
                try await Self.send(gateway, "/strict/b", [("Authorization", "DPoP \(token)"), ("DPoP", proof)]).status
                    == 200)
        }
    }

    /// Behind a trusted proxy the URL is the one the client saw (`X-Forwarded-Proto`/`-Host`),
    /// compared after normalization: an uppercase host and the default port match.
    @Test(arguments: ["https://api.example.com/p", "https://API.Example.COM/p", "https://api.example.com:443/p"])
    func theURLIsTheOneTheClientSawBehindATrustedProxy(_ htu: String) async throws {
        try await Self.withBoundClient(configure: { $0["trustedProxies"] = ["127.0.0.1/32"] }) { gateway, key, token in
            let proof = try await Self.proof(key, url: htu, token: token)
            let headers = [
                ("Authorization", "DPoP \(token)"), ("DPoP", proof), ("X-Forwarded-Proto", "https"),
                ("X-Forwarded-Host", "api.example.com"),
            ]
            #expect(try await Self.send(gateway, "/p", headers).status == 200)
        }
    }

    /// `publicBaseURL`: only that base is accepted.
    @Test func publicBaseURLIsTheOnlyAcceptedBase() async throws {
        try await Self.withBoundClient(configure: {
            $0.set("tokens.dpop", ["publicBaseURL": "https://public.example.com"])
        }) { gateway, key, token in
            let good = try await Self.proof(key, url: "https://public.example.com/q", token: token)
            #expect(
                try await Self.send(gateway, "/q", [("Authorization", "DPoP \(token)"), ("DPoP", good)]).status == 200)
            let local = try await Self.proof(key, url: "http://127.0.0.1:\(gateway.port)/q", token: token)
            let refused = try await Self.send(gateway, "/q", [("Authorization", "DPoP \(token)"), ("DPoP", local)])
            #expect(Self.problem(refused).detail == "The DPoP proof failed its check: htu")
        }
    }

    // MARK: DPoP-Nonce (RFC 9449 §8)

    /// A proof without a nonce gets 401 `use_dpop_nonce` with a `DPoP-Nonce`; the client's
    /// retry with that nonce passes. A nonce past half its life still passes and the answer
    /// carries a new one; past `maxAgeSeconds` it is refused with a fresh one. Never forwarded
    /// when refused.
    @Test func aProofWithoutTheServerNonceIsAnsweredWithOneAndTheRetryPasses() async throws {
        let clock = TestClock()
        let gateway = try await GatewayFixture.start(clock: clock) { config in
            config.set("tokens.dpop", ["nonce": true, "maxAgeSeconds": 60])
        }
        try await withCleanup({ await gateway.stop() }) {
            let key = try await Self.clientKey()
            let token = Self.boundToken(key, subject: "nonce-user")
            let url = "http://127.0.0.1:\(gateway.port)/nonce"
            let iat = { JSONValue.number(JSONNumber(Int(clock.now))) }

            let bare = try await Self.proof(key, url: url, token: token, ["iat": iat()])
            let challenge = try await Self.send(
                gateway, "/nonce", [("Authorization", "DPoP \(token)"), ("DPoP", bare)])
            #expect(challenge.status == 401)
            #expect(Self.problem(challenge).type == "urn:auth-gateway:problem:dpop.use_nonce")
            #expect(challenge.header("www-authenticate")?.hasPrefix("DPoP error=\"use_dpop_nonce\"") == true)
            #expect(challenge.header("www-authenticate")?.contains("algs=\"ES256 RS256 PS256 EdDSA\"") == true)
            let nonce = try #require(challenge.header("dpop-nonce"))
            #expect(gateway.backend.requestCount == 0)

            let retry = try await Self.proof(key, url: url, token: token, ["iat": iat(), "nonce": .string(nonce)])
            let passed = try await Self.send(gateway, "/nonce", [("Authorization", "DPoP \(token)"), ("DPoP", retry)])
            #expect(passed.status == 200, "\(passed.text)")
            #expect(passed.header("dpop-nonce") == nil, "a young nonce is not replaced")
            // The refused proof did not use up a jti: the bare proof's jti was never recorded.

            // Past half its life: passes, and a new nonce comes with the answer.
            clock.advance(by: 40)
            let older = try await Self.proof(key, url: url, token: token, ["iat": iat(), "nonce": .string(nonce)])
            let renewed = try await Self.send(gateway, "/nonce", [("Authorization", "DPoP \(token)"), ("DPoP", older)])
            #expect(renewed.status == 200)
            let next = try #require(renewed.header("dpop-nonce"))
            #expect(next != nonce)

            // Past maxAgeSeconds: refused, with a fresh nonce to retry with.
            clock.advance(by: 30)
            let stale = try await Self.proof(key, url: url, token: token, ["iat": iat(), "nonce": .string(nonce)])
            let refused = try await Self.send(gateway, "/nonce", [("Authorization", "DPoP \(token)"), ("DPoP", stale)])
            #expect(refused.status == 401)
            #expect(refused.header("www-authenticate")?.hasPrefix("DPoP error=\"use_dpop_nonce\"") == true)
            #expect(refused.header("dpop-nonce") != nil)
            // A made-up nonce is refused the same way.
            let forged = try await Self.proof(key, url: url, token: token, ["iat": iat(), "nonce": "bm90LWEtbm9uY2U"])
            #expect(
                Self.problem(
                    try await Self.send(gateway, "/nonce", [("Authorization", "DPoP \(token)"), ("DPoP", forged)])
                ).type == "urn:auth-gateway:problem:dpop.use_nonce")
            // The renewed nonce works.
            let good = try await Self.proof(key, url: url, token: token, ["iat": iat(), "nonce": .string(next)])
            #expect(
                try await Self.send(gateway, "/nonce", [("Authorization", "DPoP \(token)"), ("DPoP", good)]).status
                    == 200)
            #expect(gateway.backend.requestCount == 3)
        }
    }

    /// Without `nonce`, a proof's `nonce` claim is ignored and no `DPoP-Nonce` is sent.
    @Test func withoutTheNonceOptionNoNonceIsAskedOrSent() async throws {
        try await Self.withBoundClient { gateway, key, token in
            let proof = try await Self.proof(
                key, url: "http://127.0.0.1:\(gateway.port)/nn", token: token, ["nonce": "anything"])
            let response = try await Self.send(gateway, "/nn", [("Authorization", "DPoP \(token)"), ("DPoP", proof)])
            #expect(response.status == 200)
            #expect(response.header("dpop-nonce") == nil)
        }
    }
}
