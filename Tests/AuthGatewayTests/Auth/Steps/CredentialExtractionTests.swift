import Testing

import AuthGatewayTesting
@testable import AuthGateway

@Suite("CredentialExtraction")
struct CredentialExtractionTests {
    let fixture: AuthStepFixture
    let extraction: CredentialExtraction

    init() throws {
        self.fixture = try AuthStepFixture()
        self.extraction = CredentialExtraction(sources: self.fixture.configuration.tokens.sources)
    }

    @Test("a token is found; none is refused on a required route and anonymous on an optional one")
    func requiredAndOptional() {
        let token = TestKeys.token()
        let found = self.extraction.extract(from: ["Authorization": "Bearer \(token)"], auth: .required)
        #expect(found == .token(self.fixture.bearer(token)))
        #expect(self.extraction.extract(from: [:], auth: .required) == .refused(.tokenMissing))
        #expect(self.extraction.extract(from: [:], auth: .optional) == .anonymous)
    }

    @Test("auth none never looks at credentials, not even malformed ones")
    func noneNeverLooks() {
        #expect(self.extraction.extract(from: ["Authorization": "garbage"], auth: .none) == .anonymous)
    }

    @Test("two different tokens are ambiguous (400), the same one twice is not")
    func twoTokens() {
        let token = TestKeys.token()
        let other = TestKeys.token(subject: "other")
        #expect(
            self.extraction.extract(
                from: ["Authorization": "Bearer \(token)", "Cookie": "access_token=\(other)"], auth: .required)
                == .refused(.ambiguousToken))
        guard
            case .token(let same) = self.extraction.extract(
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
            case .token(let token) = self.extraction.extract(
                from: ["Authorization": "DPoP abc.def.ghi"], auth: .required)
        else {
            Issue.record("a DPoP-scheme token is a token")
            return
        }
        #expect(token.dpopScheme)
        #expect(token.value == "abc.def.ghi")
    }
}
