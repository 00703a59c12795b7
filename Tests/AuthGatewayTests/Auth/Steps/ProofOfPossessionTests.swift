import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The DPoP step's decisions (the proofs themselves: `DPoPProofTests`; proofs made by joserfc
/// over the wire: `DPoPTests`).
@Suite("ProofOfPossession")
struct ProofOfPossessionTests {
    let fixture: AuthStepFixture
    let step: ProofOfPossession

    init() throws {
        self.fixture = try AuthStepFixture()
        self.step = ProofOfPossession(
            configuration: self.fixture.configuration.tokens.dpop, replay: ReplayCache(), sharedReplay: nil,
            nonceKey: DPoPNonce.key(sharedSecret: nil), eventLoop: self.fixture.eventLoop)
    }

    private func refusal(_ outcome: ProofOfPossession.Outcome) -> GatewayError? {
        if case .refused(let error, _) = outcome { return error }
        return nil
    }

    private func accepted(_ outcome: ProofOfPossession.Outcome) -> Bool {
        if case .accepted = outcome { return true }
        return false
    }

    @Test("an unbound bearer token passes unless the route requires DPoP; the DPoP scheme is for bound tokens only")
    func unboundTokens() throws {
        let bearer = try self.fixture.identity(TestKeys.token())
        #expect(
            self.accepted(self.step.check(bearer, self.fixture.request([], route: self.fixture.route(dpop: .allowed)))))
        let required = self.refusal(
            self.step.check(bearer, self.fixture.request([], route: self.fixture.route(dpop: .required))))
        #expect(required?.errorType == "dpop.required")
        #expect(required?.wwwAuthenticate == "DPoP algs=\"ES256 RS256 PS256 EdDSA\"")
        let asDPoP = try self.fixture.identity(TestKeys.token(), dpopScheme: true)
        #expect(self.refusal(self.step.check(asDPoP, self.fixture.request([])))?.errorType == "dpop.invalid_proof")
    }

    @Test("a bound token needs the DPoP scheme and exactly one valid proof; off ignores the binding")
    func boundTokens() throws {
        let bound = TestKeys.token(extra: ["cnf": ["jkt": "some-thumbprint"]])
        let asBearer = try self.fixture.identity(bound)
        #expect(self.refusal(self.step.check(asBearer, self.fixture.request([])))?.errorType == "dpop.required")
        let asDPoP = try self.fixture.identity(bound, dpopScheme: true)
        #expect(self.refusal(self.step.check(asDPoP, self.fixture.request([])))?.errorType == "dpop.required")
        let twice = self.refusal(self.step.check(asDPoP, self.fixture.request([("DPoP", "a.b.c"), ("DPoP", "a.b.c")])))
        #expect(twice?.detail == "The DPoP proof failed its check: more than one DPoP header")
        let garbage = self.refusal(self.step.check(asDPoP, self.fixture.request([("DPoP", "garbage")])))
        #expect(garbage?.detail == "The DPoP proof failed its check: not a JWS")
        #expect(
            self.accepted(self.step.check(asBearer, self.fixture.request([], route: self.fixture.route(dpop: .off)))))
    }
}
