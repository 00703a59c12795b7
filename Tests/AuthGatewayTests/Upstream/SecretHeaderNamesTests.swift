import NIOHPACK
import Testing

@testable import AuthGateway

@Suite("SecretHeaderNames: which fields HPACK encodes never-indexed")
struct SecretHeaderNamesTests {
    @Test func credentialsAndCookiesAreAlwaysSecret() {
        let names = SecretHeaderNames()
        for name in ["authorization", "proxy-authorization", "cookie", "set-cookie", "dpop"] {
            #expect(names.indexing(name) == .neverIndexed, "\(name)")
        }
        for name in ["content-type", "x-request-id", "accept", "x-user-id"] {
            #expect(names.indexing(name) == .indexable, "\(name)")
        }
    }

    @Test func configuredTokenHeadersAreSecretWhateverTheirCase() {
        let names = SecretHeaderNames(configured: ["X-Access-Token", "X-Refresh-Token"])
        #expect(names.indexing("x-access-token") == .neverIndexed)
        #expect(names.indexing("x-refresh-token") == .neverIndexed)
        #expect(names.indexing("x-other") == .indexable)
    }

    @Test func aFieldThePeerSentNeverIndexedStaysSo() {
        let names = SecretHeaderNames()
        #expect(names.indexing("x-peer-secret", peerNeverIndexed: ["x-peer-secret"]) == .neverIndexed)
        #expect(names.indexing("x-plain", peerNeverIndexed: ["x-peer-secret"]) == .indexable)
    }

    @Test func neverIndexedNamesAreReadFromADecodedBlock() {
        var block = HPACKHeaders()
        block.add(name: "x-a", value: "1", indexing: .neverIndexed)
        block.add(name: "x-b", value: "2")
        block.add(name: "x-a", value: "3", indexing: .neverIndexed)
        block.add(name: "x-c", value: "4", indexing: .nonIndexable)
        #expect(SecretHeaderNames.neverIndexedNames(in: block) == ["x-a"])
        #expect(SecretHeaderNames.neverIndexedNames(in: HPACKHeaders([("x", "y")])).isEmpty)
    }

    @Test func aPeersNeverIndexedFieldsBeyondTheSecretNamesAreListed() {
        let names = SecretHeaderNames(configured: ["X-Access-Token"])
        var block = HPACKHeaders()
        block.add(name: "authorization", value: "Bearer t", indexing: .neverIndexed)
        block.add(name: "x-access-token", value: "t", indexing: .neverIndexed)
        block.add(name: "x-a", value: "1", indexing: .neverIndexed)
        block.add(name: "x-a", value: "2", indexing: .neverIndexed)
        block.add(name: "x-b", value: "3")
        #expect(names.peerNeverIndexedNames(in: block) == ["x-a"])
        // The secret names are encoded never-indexed anyway: leaving them out changes nothing.
        let all = SecretHeaderNames.neverIndexedNames(in: block)
        let beyond = names.peerNeverIndexedNames(in: block)
        for name in ["authorization", "x-access-token", "x-a", "x-b"] {
            #expect(
                names.indexing(name, peerNeverIndexed: beyond) == names.indexing(name, peerNeverIndexed: all), "\(name)"
            )
        }
    }

    @Test func theConfigurationNamesItsTokenCarriers() throws {
        let configuration = try ConfigurationLoader().load(
            text: #"""
                {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:1"]}},
                 "routes": [{"name": "r", "pathPrefix": "/", "backend": "api", "auth": "none"}],
                 "tokens": {"sources": [{"header": "X-Api-Token"}]},
                 "authService": {"url": "http://127.0.0.1:2", "refresh": {"refreshTokenSources": [{"header": "X-Session-Refresh"}],
                                 "responseHeaders": {"accessToken": "X-New-Access", "refreshToken": "X-New-Refresh"}}}}
                """#,
            baseDirectory: "/"
        )
        let names = SecretHeaderNames(configuration: configuration)
        for name in ["x-api-token", "x-session-refresh", "x-new-access", "x-new-refresh", "authorization"] {
            #expect(names.indexing(name) == .neverIndexed, "\(name)")
        }
    }
}
