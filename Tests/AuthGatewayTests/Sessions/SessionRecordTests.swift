import Testing

@testable import AuthGateway

@Suite("SessionRecord")
struct SessionRecordTests {
    private func record(_ accessToken: String) -> SessionRecord {
        SessionRecord(subject: "alice", idToken: "id", accessToken: accessToken, createdAt: 0, lastUsedAt: 0)
    }

    @Test("the access token and its Authorization value stay one; a new token replaces both")
    func accessTokenAndAuthorization() {
        var record = self.record("eyJ.first.token")
        #expect(record.accessToken == "eyJ.first.token")
        #expect(record.accessTokenSlice == "eyJ.first.token")
        #expect(record.bearerAuthorization == "Bearer eyJ.first.token")
        record.accessToken = "eyJ.second"
        #expect(record.accessToken == "eyJ.second")
        #expect(record.accessTokenSlice == "eyJ.second")
        #expect(record.bearerAuthorization == "Bearer eyJ.second")
        #expect(self.record("a") != self.record("b"))
        #expect(self.record("a") == self.record("a"))
    }

    @Test("a session identity hands on the record's Authorization value; a refreshed or foreign token gets its own")
    func identityAuthorization() {
        let record = self.record("eyJ.session.token")
        let token = VerifiedToken(
            issuerIndex: 0, generation: 0, claims: [:], subject: "alice", expiresAt: 2_000_000_000, notBefore: nil,
            issuedAt: nil, leewaySeconds: 0)
        let digest = TokenDigest(of: "handle"[...])
        var identity = Identity(
            token: token, accessToken: SessionAuthentication.token(of: record, digest: digest), issuer: "https://idp")
        #expect(identity.bearerAuthorization == "Bearer eyJ.session.token")
        var shared = identity.bearerAuthorization
        var stored = record.bearerAuthorization
        #expect(shared.withUTF8 { $0.baseAddress } == stored.withUTF8 { $0.baseAddress }, "no new string")
        identity.replacementAccessToken = "eyJ.refreshed"
        #expect(identity.bearerAuthorization == "Bearer eyJ.refreshed")
        let header = Identity(
            token: token,
            accessToken: ExtractedToken(value: "xBearer eyJ"[...].dropFirst(8), location: .session(digest)),
            issuer: "https://idp")
        #expect(header.bearerAuthorization == "Bearer eyJ")
    }
}
