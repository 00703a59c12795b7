import AuthGateway
import AuthGatewayDemo
import AuthGatewayTesting
import Benchmark
import Crypto
import Foundation

/// Micro benchmarks of the gateway's hot path: time and allocations per operation.
///
///     swift package --package-path Benchmarks benchmark
///
/// "WholeRequest" drives one complete request through the real client pipeline with embedded
/// channels (no system calls): its `mallocCountTotal` per iteration is the "allocations per
/// request" figure of docs/benchmarks.md.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        warmupIterations: 100,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )

    // The harness's own cost per iteration (its malloc count is subtracted in docs/benchmarks.md).
    Benchmark("Baseline (empty iteration)") { benchmark in
        for index in benchmark.scaledIterations { blackHole(index) }
    }

    let issuer = "https://auth.bench.local"
    let audience = "bench-gateway"
    let now = Date().timeIntervalSince1970
    let claims: JSONObject = [
        "iss": .string(issuer), "aud": .string(audience), "sub": "bench-user-42", "scope": "read:items write:items",
        "iat": .number(JSONNumber(Int(now))), "exp": .number(JSONNumber(Int(now) + 86400)),
    ]
    let rsa = try! JWTSigner.generateRS256(kid: "bench-rs256")
    let ec = JWTSigner(key: .es256(P256.Signing.PrivateKey()), kid: "bench-es256")
    let ed = JWTSigner(key: .edDSA(Curve25519.Signing.PrivateKey()), kid: "bench-ed")
    let verifier = try! GatewayBenchmarkSupport.Verifier(
        issuer: issuer,
        audience: audience,
        keys: [
            ("bench-rs256", "RS256", rsa.publicKeyPEM), ("bench-es256", "ES256", ec.publicKeyPEM),
            ("bench-ed", "EdDSA", ed.publicKeyPEM),
        ]
    )
    let tokens = [("RS256", try! rsa.sign(claims)), ("ES256", try! ec.sign(claims)), ("EdDSA", try! ed.sign(claims))]

    for (algorithm, token) in tokens {
        precondition(verifier.verifyUncached(token), "\(algorithm) token must verify")
        Benchmark("Verify \(algorithm) (cold, no cache)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(verifier.verifyUncached(token)) }
        }
        Benchmark("Verify \(algorithm) (verified-token cache hit)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(verifier.verifyCached(token, now: now)) }
        }
    }
    let loopVerifier = GatewayBenchmarkSupport.LoopVerifier(verifier)
    for _ in 0..<2 { precondition(loopVerifier.verify(tokens[0].1, now: now)) }  // verified, then a cache hit: memoized
    Benchmark("Verify (per-loop memo hit, as the request path does)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(loopVerifier.verify(tokens[0].1, now: now)) }
    }

    let routes = GatewayBenchmarkSupport.Routes(count: 20)
    Benchmark("Route matching (20 prefix routes, last one matches)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(routes.match(path: "/service-19/items/42")) }
    }

    let rsaToken = tokens[0].1
    Benchmark("Header rewriting (6 inbound headers)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(GatewayBenchmarkSupport.rewriteHeaders(token: rsaToken)) }
    }

    let configuration = """
        {"listener":{"host":"127.0.0.1","port":0},"eventLoopThreads":1,
         "tokens":{"sources":[{"header":"Authorization","schemes":["Bearer"]}],
           "issuers":[{"issuer":"\(issuer)","audiences":["\(audience)"],"leewaySeconds":0,
             "keys":[{"kid":"bench-rs256","algorithm":"RS256","publicKeyPEM":\(JSONValue.string(rsa.publicKeyPEM).jsonText)}]}]},
         "backends":{"api":{"urls":["http://127.0.0.1:18080"]}},
         "routes":[{"name":"all","pathPrefix":"/","backend":"api"}],
         "logging":{"accessLog":false}}
        """
    let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:18090\r\nAuthorization: Bearer \(rsaToken)\r\n\r\n"
    let response =
        "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 21 Nov 2026 12:00:00 GMT\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n"
    let wholeRequest = try! GatewayBenchmarkSupport.WholeRequest(
        configuration: configuration, request: request, response: response, now: now)
    precondition(try! wholeRequest.run() > 0, "the whole-request harness must produce a response")
    Benchmark("WholeRequest (GET, cached RS256 token, pooled upstream)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! wholeRequest.run()) }
    }
    // Policies (docs/policies.md): the same request and token on a route whose `require` is one
    // equality, then a 10-clause policy that holds (anyOf, not, in, suffix, cidr, exists,
    // request.method, a nested claim, a scope list). Their difference is what a policy costs a
    // request (target: at most 3 %); their mallocs must be equal (deciding allocates nothing).
    var policyClaims = claims
    policyClaims["groups"] = ["ops", "staff"]
    policyClaims["realm_access"] = ["roles": ["orders-admin"]]
    policyClaims["email"] = "bench@bench.local"
    policyClaims["email_verified"] = true
    let policyToken = try! rsa.sign(policyClaims)
    let policies = [
        ("1 equality", #"{"claims.sub":"bench-user-42"}"#),
        (
            "10-clause policy",
            #"""
            {"claims.sub":"bench-user-42","claims.groups":{"in":["admins","ops"]},"claims.scope":"write:items",
             "claims.realm_access.roles":"orders-admin","claims.email":{"suffix":"@bench.local"},
             "claims.email_verified":true,"not":{"claims.groups":"suspended"},
             "anyOf":[{"request.method":"POST"},{"request.method":{"in":["GET","HEAD"]}}],
             "client.ip":{"cidr":["10.0.0.0/8","127.0.0.0/8"]},"claims.act":{"exists":false}}
            """#
        ),
    ]
    for (name, require) in policies {
        let guarded = configuration.replacingOccurrences(
            of: #""backend":"api"}]"#, with: #""backend":"api","require":\#(require)}]"#)
        let policyRequest = "GET / HTTP/1.1\r\nHost: 127.0.0.1:18090\r\nAuthorization: Bearer \(policyToken)\r\n\r\n"
        let whole = try! GatewayBenchmarkSupport.WholeRequest(
            configuration: guarded, request: policyRequest, response: response, now: now)
        precondition(try! whole.status() == 200, "the \(name) route must let the request through")
        Benchmark("WholeRequest (GET, cached RS256 token, require: \(name))") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try! whole.run()) }
        }
    }
    // API keys (docs/policies.md, "API keys"): the same request with a key instead of the
    // cached token (SHA-256 of the key and a dictionary lookup, no signature, no cache), on the
    // same configuration with `tokens.apiKeys` added. Target: no more than the cached JWT.
    let apiKey = "agk_bench-0123456789abcdefghijklmnopqrstuvwxyz0123"
    let apiKeyDigest = SHA256.hash(data: Array(apiKey.utf8)).map { String(format: "%02x", $0) }.joined()
    let withKeys = configuration.replacingOccurrences(
        of: #""tokens":{"#,
        with:
            #""tokens":{"apiKeys":{"keys":[{"id":"bench","sha256":"\#(apiKeyDigest)","claims":{"sub":"bench-user-42","scope":"write:items"}}]},"#
    )
    for (name, credential) in [
        ("cached RS256 token", "Authorization: Bearer \(rsaToken)"), ("API key", "X-API-Key: \(apiKey)"),
    ] {
        let keyed = try! GatewayBenchmarkSupport.WholeRequest(
            configuration: withKeys, request: "GET / HTTP/1.1\r\nHost: 127.0.0.1:18090\r\n\(credential)\r\n\r\n",
            response: response, now: now)
        precondition(try! keyed.status() == 200, "the \(name) request must be let through")
        Benchmark("WholeRequest (GET, \(name), tokens.apiKeys configured)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try! keyed.run()) }
        }
    }
    // The same request as one HTTP/2 stream of a long-lived connection (docs/http2.md, "Cost": a
    // stream should cost no more than a request).
    let wholeStream = try! GatewayBenchmarkSupport.WholeHTTP2Stream(
        configuration: configuration, token: rsaToken, response: response, now: now)
    precondition(try! wholeStream.run() > 0, "the whole-stream harness must produce a response")
    Benchmark("WholeHTTP2Stream (GET, cached RS256 token, pooled upstream)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! wholeStream.run()) }
    }

    // The allocation limits CI checks (`.ci/run`; docs/benchmarks.md#allocation-limits): the
    // same request and stream as above, counting mallocs only, against the p90 limits in
    // `Benchmarks/Thresholds` (`benchmark thresholds check`). Counts are deterministic where
    // times would flake on a shared machine; few iterations keep the check cheap. Names
    // without spaces: the limits' file names are the benchmarks' names.
    let allocations = Benchmark.Configuration(
        metrics: [.mallocCountTotal],
        warmupIterations: 20,
        maxDuration: .seconds(2),
        maxIterations: 200,
        thresholds: [.mallocCountTotal: BenchmarkThresholds(absolute: [.p90: 0])]
    )
    let h1Allocations = try! GatewayBenchmarkSupport.WholeRequest(
        configuration: configuration, request: request, response: response, now: now)
    Benchmark("Allocations.HTTP1Request", configuration: allocations) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! h1Allocations.run()) }
    }
    let h2Allocations = try! GatewayBenchmarkSupport.WholeHTTP2Stream(
        configuration: configuration, token: rsaToken, response: response, now: now)
    Benchmark("Allocations.HTTP2Stream", configuration: allocations) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! h2Allocations.run()) }
    }
}
