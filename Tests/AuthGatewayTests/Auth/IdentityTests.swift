import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `Identity` keeps its fields in one shared box: a copy must still behave as a value.
@Suite("Identity")
struct IdentityTests {
    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    @Test("writing to a copy leaves the original as it was, field by field")
    func copiesAreValues() throws {
        let token = TestKeys.token()
        let original = try self.fixture.identity(token)
        var copy = original
        copy.profile = ["tenant": "acme"]
        copy.dpopThumbprint = "jkt-1"
        copy.replacementAccessToken = "new-token"
        copy.responseHeaders.append(("DPoP-Nonce", "n-1"))
        copy.apiKeyID = "key-1"

        #expect(original.profile == nil)
        #expect(original.dpopThumbprint == nil)
        #expect(original.replacementAccessToken == nil)
        #expect(original.responseHeaders.isEmpty)
        #expect(original.apiKeyID == nil)
        #expect(original.currentAccessToken == token)

        #expect(copy.profile == ["tenant": "acme"])
        #expect(copy.dpopThumbprint == "jkt-1")
        #expect(copy.currentAccessToken == "new-token")
        #expect(copy.responseHeaders.map(\.name) == ["DPoP-Nonce"])
        #expect(copy.apiKeyID == "key-1")
        // What the verification set is shared, not changed.
        #expect(copy.token === original.token)
        #expect(copy.issuer == original.issuer)
        #expect(copy.accessToken == original.accessToken)
    }

    @Test("a copy made after a write keeps that write, and later writes stay apart")
    func writesAfterCopies() throws {
        var first = try self.fixture.identity(TestKeys.token())
        first.profile = ["dept": "ops"]
        var second = first
        second.profile = ["dept": "dev"]
        first.dpopThumbprint = "jkt-first"

        #expect(first.profile == ["dept": "ops"])
        #expect(second.profile == ["dept": "dev"])
        #expect(first.dpopThumbprint == "jkt-first")
        #expect(second.dpopThumbprint == nil)
    }
}
