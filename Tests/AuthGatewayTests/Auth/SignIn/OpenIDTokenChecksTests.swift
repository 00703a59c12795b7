import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

@Suite("OpenIDTokenChecks")
struct OpenIDTokenChecksTests {
    let fixture: AuthStepFixture
    let now = Date().timeIntervalSince1970.rounded()

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    func idToken(_ overrides: JSONObject = [:], remove: [String] = [], signer: JWTSigner = TestKeys.rsa) -> String {
        var claims: JSONObject = [
            "iss": .string(TestKeys.issuer), "sub": "alice", "aud": "gateway-client", "azp": "gateway-client",
            "exp": .number(JSONNumber(Int(self.now) + 300)), "iat": .number(JSONNumber(Int(self.now) - 5)),
            "nonce": "n-1", "sid": "sid-1",
        ]
        for entry in overrides.entries { claims[entry.key] = entry.value }
        for name in remove { claims[name] = nil }
        return try! signer.sign(claims)
    }

    func check(_ token: String) -> Result<IDToken, OpenIDTokenChecks.Failure> {
        OpenIDTokenChecks.idToken(
            token, keys: self.fixture.keys, issuer: TestKeys.issuer, clientID: "gateway-client", nonce: "n-1",
            now: self.now)
    }

    @Test("a good ID token gives its subject and provider session")
    func good() throws {
        let token = try self.check(self.idToken()).get()
        #expect(token.subject == "alice" && token.providerSessionID == "sid-1")
        // aud as an array containing the client, without azp.
        #expect((try? self.check(self.idToken(["aud": ["other", "gateway-client"]], remove: ["azp"])).get()) != nil)
    }

    @Test("wrong nonce, audience, azp, issuer, signature, clock: no session")
    func refusals() {
        let cases: [(String, OpenIDTokenChecks.Failure)] = [
            (self.idToken(["nonce": "n-2"]), .nonce),
            (self.idToken(remove: ["nonce"]), .nonce),
            (self.idToken(["aud": "another-client"]), .audience),
            (self.idToken(["azp": "another-client"]), .authorizedParty),
            (self.idToken(["iss": "https://evil.example"]), .issuer),
            (self.idToken(signer: TestKeys.otherRSA), .signature),
            (self.idToken(["exp": .number(JSONNumber(Int(self.now) - 1))]), .expired),
            (self.idToken(["iat": .number(JSONNumber(Int(self.now) + 600))]), .issuedAt),
            (self.idToken(remove: ["sub"]), .subject),
            ("not.a.jwt", .signature),
        ]
        for (token, failure) in cases {
            guard case .failure(let found) = self.check(token) else {
                Issue.record("must be refused: \(failure)")
                continue
            }
            #expect(found == failure)
        }
    }

    func logoutToken(
        _ overrides: JSONObject = [:], remove: [String] = [], header: JSONObject = ["typ": "logout+jwt"]
    )
        -> String
    {
        var claims: JSONObject = [
            "iss": .string(TestKeys.issuer), "aud": "gateway-client", "iat": .number(JSONNumber(Int(self.now) - 5)),
            "jti": "jti-1", "sid": "sid-1", "sub": "alice",
            "events": ["http://schemas.openid.net/event/backchannel-logout": [:]],
        ]
        for entry in overrides.entries { claims[entry.key] = entry.value }
        for name in remove { claims[name] = nil }
        return try! TestKeys.rsa.sign(claims, header: header)
    }

    func checkLogout(_ token: String) -> Result<LogoutToken, OpenIDTokenChecks.Failure> {
        OpenIDTokenChecks.logoutToken(
            token, keys: self.fixture.keys, issuer: TestKeys.issuer, clientID: "gateway-client", now: self.now)
    }

    @Test("a good logout token names its sid, sub and jti; sid or sub alone is enough")
    func goodLogout() throws {
        let token = try self.checkLogout(self.logoutToken()).get()
        #expect(token.providerSessionID == "sid-1" && token.subject == "alice" && token.jti == "jti-1")
        #expect((try? self.checkLogout(self.logoutToken(remove: ["sid"])).get())?.subject == "alice")
        #expect((try? self.checkLogout(self.logoutToken(remove: ["sub"])).get())?.providerSessionID == "sid-1")
        #expect((try? self.checkLogout(self.logoutToken(header: [:])).get()) != nil)
    }

    @Test("invalid logout tokens are refused")
    func badLogout() {
        let cases: [(String, OpenIDTokenChecks.Failure)] = [
            (self.logoutToken(["nonce": "x"]), .nonce),
            (self.logoutToken(remove: ["events"]), .events),
            (self.logoutToken(["events": ["other": [:]]]), .events),
            (self.logoutToken(remove: ["jti"]), .jti),
            (self.logoutToken(remove: ["sid", "sub"]), .subject),
            (self.logoutToken(["aud": "another"]), .audience),
            (self.logoutToken(["iat": .number(JSONNumber(Int(self.now) - 400))]), .issuedAt),
            (self.logoutToken(["iat": .number(JSONNumber(Int(self.now) + 60))]), .issuedAt),
            (self.logoutToken(["exp": .number(JSONNumber(Int(self.now) - 1))]), .expired),
            (self.logoutToken(header: ["typ": "at+jwt"]), .type),
            (self.logoutToken(["iss": "https://evil.example"]), .issuer),
        ]
        for (token, failure) in cases {
            guard case .failure(let found) = self.checkLogout(token) else {
                Issue.record("must be refused: \(failure)")
                continue
            }
            #expect(found == failure)
        }
    }
}
