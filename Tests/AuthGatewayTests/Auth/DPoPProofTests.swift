import Foundation
import Testing

@testable import AuthGateway

/// DPoP proofs (RFC 9449 §4.3) made by joserfc (committed vectors:
/// `scripts/make_dpop_vectors.py`), each with the check the gateway must name; the URL
/// normalization of `htu`; thumbprints.
@Suite("DPoPProof, DPoPTarget, JWKThumbprint")
struct DPoPProofTests {
    static let vectorsPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/dpop/vectors.json").path

    @Test func everyCommittedVectorGetsItsVerdict() throws {
        let document = try JSONValue(parsing: String(contentsOfFile: Self.vectorsPath, encoding: .utf8))
        let now = try #require(document["now"]?.numberValue?.double)
        let htu = try #require(document["htu"]?.stringValue)
        let token = try #require(document["accessToken"]?.stringValue)
        let expected = try #require(DPoPTarget.normalized(htu: htu, paths: PathSettings()))
        let request = DPoPProof.Request(method: "GET", url: expected, accessToken: token[...], now: now)
        let vectors = try #require(document["vectors"]?.arrayValue)
        #expect(vectors.count == 16)
        for vector in vectors {
            let proof = try #require(vector["proof"]?.stringValue)
            let verdict = vector["expect"]?.stringValue
            switch DPoPProof.verify(proof[...], for: request, configuration: DPoPConfiguration()) {
            case .success(let verified):
                #expect(verdict == "ok", "passed, but expected \(verdict ?? "?")")
                // joserfc's RFC 7638 thumbprint of the same key.
                #expect(verified.thumbprint == vector["jkt"]?.stringValue)
            case .failure(let failure):
                #expect(failure.check == verdict, "\(proof.prefix(40))…")
            }
        }
    }

    /// `htu` is compared in the canonical form every decision uses (docs/forwarding.md).
    @Test func htuNormalization() {
        let paths = PathSettings()
        #expect(
            DPoPTarget.normalized(htu: "HTTPS://Example.COM.:443/a/b/../%7Euser/%41", paths: paths)
                == "https://example.com/a/~user/A")
        #expect(
            DPoPTarget.normalized(htu: "http://h/a%2fb", paths: PathSettings(escapedSlashes: .keep)) == "http://h/a%2Fb")
        #expect(DPoPTarget.normalized(htu: "http://h/a%2fb", paths: PathSettings(escapedSlashes: .decode)) == "http://h/a/b")
        // An ambiguous path never equals a decided request's.
        #expect(DPoPTarget.normalized(htu: "http://h/a%2fb", paths: paths) == nil)
        #expect(DPoPTarget.normalized(htu: "http://h/a/..;/b", paths: paths) == nil)
        #expect(DPoPTarget.normalized(htu: "http://example.com:80", paths: paths) == "http://example.com/")
        #expect(DPoPTarget.normalized(htu: "http://example.com:8080/x", paths: paths) == "http://example.com:8080/x")
        #expect(DPoPTarget.normalized(htu: "http://example.com/x?y=1", paths: paths) == nil)
        #expect(DPoPTarget.normalized(htu: "http://example.com/x#f", paths: paths) == nil)
        #expect(DPoPTarget.normalized(htu: "ftp://example.com/x", paths: paths) == nil)
        #expect(DPoPTarget.normalized(htu: "http://user@example.com/x", paths: paths) == nil)
        #expect(DPoPTarget.normalized(htu: "http:///x", paths: paths) == nil)
        #expect(
            DPoPTarget.normalizedBase(scheme: "HTTPS", authority: "Api.Example.com.:443").map {
                DPoPTarget.expected(base: $0, canonicalPath: "/o/~")
            } == "https://api.example.com/o/~")
    }

    /// RFC 7638 §3.1's example key and thumbprint.
    @Test func thumbprintOfTheRFC7638Example() {
        let jwk: JSONObject = [
            "kty": "RSA",
            "n":
                "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB", "alg": "RS256", "kid": "2011-04-29",
        ]
        #expect(JWKThumbprint.sha256(of: jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        #expect(JWKThumbprint.sha256(of: ["kty": "oct", "k": "x"]) == nil)
        #expect(JWKThumbprint.sha256(of: ["kty": "EC", "crv": "P-256", "x": "a"]) == nil)
    }

    @Test func theReplayCacheRefusesASecondUseUntilTheProofExpires() {
        let cache = ReplayCache(capacity: 100)
        let proof = DPoPVerifiedProof(thumbprint: "k1", jti: "j", issuedAt: 100)
        #expect(cache.firstUse(of: proof, until: 165, now: 100))
        #expect(!cache.firstUse(of: proof, until: 165, now: 164))
        // Another key's proof with the same jti is another proof.
        #expect(cache.firstUse(of: DPoPVerifiedProof(thumbprint: "k2", jti: "j", issuedAt: 100), until: 165, now: 101))
        // Past its window the proof's iat fails anyway; the entry no longer counts.
        #expect(cache.firstUse(of: proof, until: 230, now: 166))
    }
}
