import Foundation
import Testing

@testable import AuthGateway

/// One entry of `Fixtures/jwt/vectors.json`, made by `scripts/make_test_vectors.py` with
/// Python `cryptography`/`joserfc` — an implementation independent of the gateway's.
struct TokenVector: Decodable, Sendable, CustomTestStringConvertible {
    let name: String
    let token: String
    let kidConfig: String
    let expect: String
    let note: String

    var testDescription: String { self.name }
}

private struct VectorFile: Decodable, Sendable {
    let now: Double
    let issuer: String
    let otherIssuer: String
    let audience: String
    let leewaySeconds: Int
    let vectors: [TokenVector]
}

private let vectorFile: VectorFile = {
    do {
        return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: Fixtures.url("jwt/vectors.json")))
    } catch {
        fatalError("cannot read vectors.json: \(error)")
    }
}()

/// The vectors, at file scope so `@Test(arguments:)` can name them.
let tokenVectors = vectorFile.vectors

@Suite("TokenVerifier vectors")
struct TokenVerifierVectorTests {
    static let vectors = tokenVectors

    @Test("the vector file matches the configuration these tests build")
    func fileParameters() {
        #expect(vectorFile.now == VectorKeys.now)
        #expect(vectorFile.issuer == VectorKeys.issuer)
        #expect(vectorFile.otherIssuer == VectorKeys.otherIssuer)
        #expect(vectorFile.audience == VectorKeys.audience)
        #expect(vectorFile.leewaySeconds == VectorKeys.leewaySeconds)
        #expect(Set(Self.vectors.map(\.kidConfig)) == ["static", "jwks"])
        #expect(Set(Self.vectors.map(\.name)).count == Self.vectors.count, "vector names are unique")
    }

    @Test("every failure reason and success is covered by some vector")
    func coverage() {
        let expectations = Set(Self.vectors.map(\.expect))
        for failure in TokenFailure.allCases {
            #expect(expectations.contains(failure.rawValue), "no vector expects \(failure.rawValue)")
        }
        #expect(expectations.contains("valid"))
        #expect(expectations.isSubset(of: Set(TokenFailure.allCases.map(\.rawValue) + ["valid"])))
    }

    @Test("vector", arguments: tokenVectors)
    func vector(_ vector: TokenVector) {
        let keys = vector.kidConfig == "jwks" ? VectorKeys.jwksSnapshot : VectorKeys.staticSnapshot
        let verdict = VectorKeys.verdict(vector.token, keys: keys)
        #expect(verdict == vector.expect, "\(vector.name): \(vector.note)")
    }

    @Test(
        "valid vectors yield the verified claims and the right issuer",
        arguments: tokenVectors.filter { $0.expect == "valid" })
    func validVectorClaims(_ vector: TokenVector) throws {
        let keys = vector.kidConfig == "jwks" ? VectorKeys.jwksSnapshot : VectorKeys.staticSnapshot
        let verified = try VectorKeys.verify(vector.token, keys: keys).get()
        let issuer = try #require(verified.claims["iss"]?.stringValue)
        #expect(verified.issuerIndex == keys.issuerIndex(for: issuer))
        #expect(verified.generation == keys.generation)
        #expect(verified.subject == verified.claims["sub"]?.stringValue)
        #expect(verified.expiresAt == verified.claims["exp"]?.numberValue?.double)
        #expect(verified.leewaySeconds == Double(VectorKeys.leewaySeconds))
    }
}
