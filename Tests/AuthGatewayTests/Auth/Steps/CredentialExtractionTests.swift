import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The first step: the one credential a request presents (docs/authentication.md, "Token
/// extraction"), whatever the way in.
@Suite("CredentialExtraction")
struct CredentialExtractionTests {
    let fixture: AuthStepFixture
    let extraction: CredentialExtraction

    init() throws {
        self.fixture = try AuthStepFixture()
        self.extraction = CredentialExtraction(
            sources: self.fixture.configuration.tokens.sources, apiKeyHeader: "X-API-Key")
    }

    @Test("a token is found; none is refused on a required route and no credential on an optional one")
    func requiredAndOptional() {
        let token = TestKeys.token()
        let found = self.extraction.extract(from: ["Authorization": "Bearer \(token)"], auth: .required)
        #expect(found == .success(.token(self.fixture.bearer(token))))
        #expect(self.extraction.extract(from: [:], auth: .required) == .failure(.tokenMissing))
        #expect(self.extraction.extract(from: [:], auth: .optional) == .success(.none))
    }

    @Test("auth none never looks at credentials, not even malformed ones or a key")
    func noneNeverLooks() {
        #expect(self.extraction.extract(from: ["Authorization": "garbage"], auth: .none) == .success(.none))
        #expect(self.extraction.extract(from: ["X-API-Key": "nonsense"], auth: .none) == .success(.none))
    }

    @Test("two different tokens are ambiguous (400), the same one twice is not")
    func twoTokens() {
        let token = TestKeys.token()
        let other = TestKeys.token(subject: "other")
        #expect(
            self.extraction.extract(
                from: ["Authorization": "Bearer \(token)", "Cookie": "access_token=\(other)"], auth: .required)
                == .failure(.ambiguousToken))
        guard
            case .success(.token(let same)) = self.extraction.extract(
                from: ["Authorization": "Bearer \(token)", "Cookie": "access_token=\(token)"], auth: .required)
        else {
            Issue.record("the same token in two sources is that token")
            return
        }
        #expect(same.value == token[...])
    }

    @Test("the DPoP scheme is found on Authorization and marked as such")
    func dpopScheme() {
        guard
            case .success(.token(let token)) = self.extraction.extract(
                from: ["Authorization": "DPoP abc.def.ghi"], auth: .required)
        else {
            Issue.record("a DPoP-scheme token is a token")
            return
        }
        #expect(token.dpopScheme)
        #expect(token.value == "abc.def.ghi")
    }

    @Test("an API key is the credential; with a token it is ambiguous, sent twice it is invalid")
    func apiKeys() {
        #expect(self.extraction.extract(from: ["x-api-key": "k1"], auth: .required) == .success(.apiKey("k1")))
        #expect(self.extraction.extract(from: ["X-API-Key": "k1"], auth: .optional) == .success(.apiKey("k1")))
        for token in [("Authorization", "Bearer abc"), ("Cookie", "access_token=abc")] {
            #expect(
                self.extraction.extract(from: .init([("X-API-Key", "k1"), token]), auth: .required)
                    == .failure(.apiKeyAmbiguous))
        }
        #expect(
            self.extraction.extract(from: .init([("X-API-Key", "k1"), ("X-API-Key", "k1")]), auth: .required)
                == .failure(.apiKeyInvalid))
        // Without `tokens.apiKeys` the header is nobody's credential.
        let plain = CredentialExtraction(sources: self.fixture.configuration.tokens.sources)
        #expect(plain.extract(from: ["X-API-Key": "k1"], auth: .required) == .failure(.tokenMissing))
    }
}
