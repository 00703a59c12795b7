import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// DPoP (RFC 9449, docs/authentication.md) over HTTP/2 and behind TLS, with proofs made by Python joserfc
/// as in `DPoPTests`: a stream is checked as an HTTP/1.1 request is (`htu` from `:scheme` and
/// `:authority`, `htm` from `:method`, the replay cache, the challenge), and behind the TLS
/// listener the URL a client signs is its `https` one.
@Suite("DPoP over HTTP/2 and TLS (joserfc proofs, real sockets)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct DPoPTransportTests {
    /// A gateway whose backend reports the verified thumbprint (`X-User-Jkt`); TLS on the
    /// listener with the example certificate (localhost, 127.0.0.1) when `tls`.
    static func gateway(tls: Bool = false) async throws -> GatewayFixture {
        let gateway = try await DPoPTests.gateway { config in
            if tls {
                config["listener"] = [
                    "host": "127.0.0.1", "port": 0,
                    "tls": [
                        "certificatePEMFile": .string(TLSTests.certificatePath),
                        "privateKeyPEMFile": .string(TLSTests.keyPath),
                    ],
                ]
            }
        }
        atTestEnd { await gateway.stop() }
        return gateway
    }

    /// A DPoP request over HTTP/2: the proof in `dpop`, the token in `authorization`.
    static func exchange(
        _ client: H2TestClient, _ method: String = "GET", path: String, authority: String, scheme: String = "http",
        token: String, proofs: [String], body: String? = nil
    ) async throws -> H2TestClient.StreamResult {
        let fields = [("authorization", "DPoP \(token)")] + proofs.map { ("dpop", $0) }
        let headers = H2TestClient.request(method, path: path, authority: authority, scheme: scheme, fields: fields)
        var frames: [HTTP2Frame.FramePayload] = [.headers(.init(headers: headers, endStream: body == nil))]
        if let body { frames.append(.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))) }
        return try await client.exchange(frames)
    }

    static func echoed(_ result: H2TestClient.StreamResult) -> JSONValue? {
        try? JSONValue(parsing: String(buffer: result.body))
    }

    static func problem(_ result: H2TestClient.StreamResult) -> (type: String?, detail: String?) {
        let document = try? JSONValue(parsing: String(buffer: result.body))
        return (document?["type"]?.stringValue, document?["detail"]?.stringValue)
    }

    @Test func aValidProofPassesOverHTTP2AndEachCheckHoldsThere() async throws {
        let gateway = try await Self.gateway()
        let key = try await DPoPTests.clientKey()
        let token = DPoPTests.boundToken(key)
        let authority = "127.0.0.1:\(gateway.port)"
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }

        // `htu` is `:scheme://:authority` and the path without the query.
        let proof = try await DPoPTests.proof(key, url: "http://\(authority)/h2/orders", token: token)
        let passed = try await Self.exchange(
            client, path: "/h2/orders?page=2", authority: authority, token: token, proofs: [proof])
        #expect(passed.status == 200, "\(String(buffer: passed.body))")
        let headers = Self.echoed(passed)?["headers"]
        #expect(headers?["x-user-jkt"]?.arrayValue?.first?.stringValue == key.jkt)
        #expect(headers?["dpop"] == nil, "the proof was forwarded")

        // The same proof again, on the same connection: a replay.
        let replay = try await Self.exchange(
            client, path: "/h2/orders", authority: authority, token: token, proofs: [proof])
        #expect(replay.status == 401)
        #expect(Self.problem(replay).type == "urn:auth-gateway:problem:dpop.invalid_proof")
        #expect(Self.problem(replay).detail?.contains("jti") == true)
        #expect(replay.headers?.first(name: "www-authenticate")?.hasPrefix("DPoP error=\"invalid_dpop_proof\"") == true)

        // `htm` is `:method`: a GET proof for a POST stream. (Without a body: a refusal before
        // the upload ended loses its problem document, see HTTP2AbuseTests.)
        let getProof = try await DPoPTests.proof(key, url: "http://\(authority)/h2/post", token: token)
        let wrongMethod = try await Self.exchange(
            client, "POST", path: "/h2/post", authority: authority, token: token, proofs: [getProof])
        #expect(Self.problem(wrongMethod).detail == "The DPoP proof failed its check: htm", "\(wrongMethod.frames)")
        // `htu`'s host is `:authority`.
        let otherHost = try await DPoPTests.proof(key, url: "http://other.example/h2/host", token: token)
        let wrongHost = try await Self.exchange(
            client, path: "/h2/host", authority: authority, token: token, proofs: [otherHost])
        #expect(Self.problem(wrongHost).detail == "The DPoP proof failed its check: htu")
        // Two `dpop` fields are an invalid proof, as two headers are.
        let twice = try await DPoPTests.proof(key, url: "http://\(authority)/h2/twice", token: token)
        let twoProofs = try await Self.exchange(
            client, path: "/h2/twice", authority: authority, token: token, proofs: [twice, twice])
        #expect(Self.problem(twoProofs).detail == "The DPoP proof failed its check: more than one DPoP header")
        // A bound token without a proof.
        let bare = try await Self.exchange(client, path: "/h2/bare", authority: authority, token: token, proofs: [])
        #expect(Self.problem(bare).type == "urn:auth-gateway:problem:dpop.required")
        #expect(bare.headers?.first(name: "www-authenticate") == "DPoP algs=\"ES256 RS256 PS256 EdDSA\"")

        // A POST with its own proof passes.
        let postProof = try await DPoPTests.proof(key, "POST", url: "http://\(authority)/h2/post", token: token)
        let posted = try await Self.exchange(
            client, "POST", path: "/h2/post", authority: authority, token: token, proofs: [postProof], body: "{}")
        #expect(posted.status == 200)
        #expect(gateway.backend.requestCount == 2)
    }

    /// Behind the TLS listener the scheme is `https`, over HTTP/1.1 and over HTTP/2 (ALPN h2):
    /// a proof for the `https` URL passes, one for the `http` URL of the same host and port
    /// fails its `htu` check.
    @Test func behindTLSTheURLIsHTTPS() async throws {
        let gateway = try await Self.gateway(tls: true)
        let key = try await DPoPTests.clientKey()
        let token = DPoPTests.boundToken(key)
        let authority = "localhost:\(gateway.port)"

        let http1 = try await TestConnection.connect(port: gateway.port, tls: try TLSTests.clientContext())
        atTestEnd { await http1.close() }
        func overHTTP1(_ path: String, proof: String) async throws -> TestResponse {
            try await http1.send(
                TestRequest(
                    .GET, path, headers: [("Host", authority), ("Authorization", "DPoP \(token)"), ("DPoP", proof)]))
        }
        let secure = try await DPoPTests.proof(key, url: "https://\(authority)/tls/one", token: token)
        let passed = try await overHTTP1("/tls/one", proof: secure)
        #expect(passed.status == 200, "\(passed.text)")
        #expect(passed.echoedHeader("x-user-jkt") == [key.jkt])
        let plain = try await DPoPTests.proof(key, url: "http://\(authority)/tls/two", token: token)
        let refused = try await overHTTP1("/tls/two", proof: plain)
        #expect(refused.status == 401)
        #expect(DPoPTests.problem(refused).detail == "The DPoP proof failed its check: htu")

        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(TLSTests.certificatePath)
        configuration.applicationProtocols = ["h2"]
        let h2 = try await H2TestClient.connect(
            port: gateway.port, tls: try NIOSSLContext(configuration: configuration))
        atTestEnd { await h2.close() }
        let secureH2 = try await DPoPTests.proof(key, url: "https://\(authority)/tls/three", token: token)
        let passedH2 = try await Self.exchange(
            h2, path: "/tls/three", authority: authority, scheme: "https", token: token, proofs: [secureH2])
        #expect(passedH2.status == 200, "\(String(buffer: passedH2.body))")
        #expect(Self.echoed(passedH2)?["headers"]?["x-user-jkt"]?.arrayValue?.first?.stringValue == key.jkt)
        let plainH2 = try await DPoPTests.proof(key, url: "http://\(authority)/tls/four", token: token)
        let refusedH2 = try await Self.exchange(
            h2, path: "/tls/four", authority: authority, scheme: "https", token: token, proofs: [plainH2])
        #expect(refusedH2.status == 401)
        #expect(Self.problem(refusedH2).detail == "The DPoP proof failed its check: htu")
        #expect(gateway.backend.requestCount == 2)
    }
}
