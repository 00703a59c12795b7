import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

@Suite("JWTVerification")
struct JWTVerificationTests {
    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    @Test("a good signature verifies; a forged one and an unknown kid of static keys are refused at once")
    func signatures() throws {
        let verification = self.fixture.verification()
        guard
            case .verified(let verified) = verification.verify(
                TestKeys.token()[...], keys: self.fixture.keys, trace: nil)
        else {
            Issue.record("a good token verifies")
            return
        }
        #expect(verified.subject == "user-42")
        guard
            case .refused(let forged) = verification.verify(
                TestKeys.token(signer: TestKeys.otherRSA)[...], keys: self.fixture.keys, trace: nil)
        else {
            Issue.record("a forged token is refused")
            return
        }
        #expect(forged == .tokenRejected(.badSignature))
        let stranger = try JWTSigner.generateRS256(kid: "nobody")
        guard
            case .refused(let unknown) = verification.verify(
                TestKeys.token(signer: stranger)[...], keys: self.fixture.keys, trace: nil)
        else {
            Issue.record("an unknown kid of an issuer without a JWKS is refused")
            return
        }
        #expect(unknown == .tokenRejected(.unknownKey))
    }

    @Test("an unknown kid of an issuer with a JWKS asks for a refetch, naming the issuer")
    func unknownKeyOfARemoteIssuer() throws {
        let remote = try AuthStepFixture(jwksURL: "http://127.0.0.1:1/jwks.json")
        let stranger = try JWTSigner.generateRS256(kid: "rotated")
        let verification = remote.verification()
        guard
            case .unknownKey(let issuerIndex) = verification.verify(
                TestKeys.token(signer: stranger)[...], keys: remote.keys, trace: nil)
        else {
            Issue.record("an unknown kid of a JWKS issuer asks for a refetch")
            return
        }
        #expect(issuerIndex == 0)
        // No client to fetch with: the refetch runs and fails (nil keys: 503 for the caller);
        // the cooldown then holds, and the keys were never fetched.
        guard case .pending(let refetched) = verification.refetchKeys(issuerIndex: issuerIndex, keys: remote.keys)
        else {
            Issue.record("the first refetch is allowed")
            return
        }
        var answered = false
        var gotKeys = false
        refetched.assumeIsolated().whenSuccess { keys in
            answered = true
            gotKeys = keys != nil
        }
        remote.eventLoop.run()
        #expect(answered)
        #expect(!gotKeys)
        guard case .notAllowed(let neverFetched) = verification.refetchKeys(issuerIndex: issuerIndex, keys: remote.keys)
        else {
            Issue.record("a second refetch within jwksMinRefetchSeconds is not allowed")
            return
        }
        #expect(neverFetched)
    }

    @Test("a token the gateway fetched itself is verified through the shared cache and fills it")
    func fetchedTokens() {
        let cache = VerifiedTokenCache(capacity: 16)
        let verification = self.fixture.verification(cache: cache)
        guard case .verified = verification.verifyFetched(TestKeys.token(subject: "hank")[...], keys: self.fixture.keys)
        else {
            Issue.record("a fetched token verifies")
            return
        }
        #expect(cache.count == 1)
    }
}
