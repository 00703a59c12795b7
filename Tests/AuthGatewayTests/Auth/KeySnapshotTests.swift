import Testing

@testable import AuthGateway

@Suite("KeySnapshot")
struct KeySnapshotTests {
    private func issuerConfiguration(_ name: String, staticKeys: [VerificationKey], remote: Bool) -> IssuerConfiguration
    {
        IssuerConfiguration(
            issuer: name, audiences: ["a"], staticKeys: staticKeys,
            jwks: remote
                ? RemoteJWKSConfiguration(
                    source: .url(try! UpstreamURL.parse("http://127.0.0.1:9000/jwks").get()), refreshSeconds: 300,
                    minRefetchSeconds: 10) : nil,
            leewaySeconds: 5, requiredClaims: ["sub"])
    }

    @Test("issuers are found by name")
    func issuerIndex() {
        let snapshot = VectorKeys.staticSnapshot
        #expect(snapshot.issuerIndex(for: VectorKeys.issuer) == 0)
        #expect(snapshot.issuerIndex(for: VectorKeys.otherIssuer) == 1)
        #expect(snapshot.issuerIndex(for: VectorKeys.issuer + "/") == nil)
        #expect(snapshot.issuers[0].keyCount == VectorKeys.staticIssuerKeys.count)
    }

    @Test("static keys win over remote keys with the same kid; kid-less keys are all kept")
    func staticKeysWin() {
        let staticKey = VectorKeys.key("shared", .ES256, "ec256")
        let remoteSame = VectorKeys.key("shared", .EdDSA, "ed25519")
        let remoteOnly = VectorKeys.key("remote", .RS256, "rsa")
        let kidless = [VectorKeys.key(nil, .RS256, "rsa"), VectorKeys.key(nil, .ES384, "ec384")]
        let tokens = TokensConfiguration(
            sources: TokensConfiguration.defaultSources,
            issuers: [
                issuerConfiguration("https://a.test", staticKeys: [staticKey, kidless[0]], remote: true),
                issuerConfiguration("https://b.test", staticKeys: [], remote: false),
            ],
            verifiedCacheEntries: 10)
        let issuers = KeySnapshot.issuers(
            from: tokens, remoteKeys: ["https://a.test": (keys: [remoteSame, remoteOnly, kidless[1]], fetchedAt: 123)])
        #expect(issuers.map(\.issuer) == ["https://a.test", "https://b.test"])
        let a = issuers[0]
        #expect(a.keysByID["shared"]?.algorithm == .ES256)
        #expect(a.keysByID["remote"]?.algorithm == .RS256)
        #expect(Set(a.keysWithoutID.map(\.algorithm)) == [.RS256, .ES384])
        #expect(a.hasRemoteKeys)
        #expect(a.remoteKeysFetchedAt == 123)
        #expect(a.audiences == ["a"] && a.leewaySeconds == 5 && a.requiredClaims == ["sub"])
        #expect(!issuers[1].hasRemoteKeys)
        #expect(issuers[1].remoteKeysFetchedAt == nil)
        #expect(issuers[1].keyCount == 0)
    }
}
