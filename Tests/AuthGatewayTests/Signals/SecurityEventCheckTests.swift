import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// `SecurityEventCheck` (docs/streams.md, "Shared Signals"): every check a pushed SET must
/// pass, each refusal with its RFC 8935 error code, and the subjects it acts on. Pure: keys,
/// configuration and `now` are passed in.
@Suite("SecurityEventCheck")
struct SecurityEventCheckTests {
    let fixture: AuthStepFixture
    let now = Date().timeIntervalSince1970.rounded()
    let configuration = SignalsConfiguration(issuer: TestKeys.issuer, audience: "gateway")
    static let revoked = SecurityEvent.Kind.sessionRevoked.uri

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    func set(
        _ overrides: JSONObject = [:], remove: [String] = [], typ: String = "secevent+jwt",
        signer: JWTSigner = TestKeys.rsa
    ) -> String {
        var claims: JSONObject = [
            "iss": .string(TestKeys.issuer), "aud": "gateway", "iat": .number(JSONNumber(Int(self.now) - 5)),
            "jti": "jti-1", "sub_id": ["format": "opaque", "id": "sid-1"],
            "events": [Self.revoked: ["event_timestamp": .number(JSONNumber(Int(self.now)))]],
        ]
        for entry in overrides.entries { claims[entry.key] = entry.value }
        for name in remove { claims[name] = nil }
        return try! signer.sign(claims, header: ["typ": .string(typ)])
    }

    func check(_ token: String) -> Result<SecurityEvent, SecurityEventRefusal> {
        SecurityEventCheck.check(token, keys: self.fixture.keys, configuration: self.configuration, now: self.now)
    }

    @Test("a session-revoked event names a provider session, a user, or both")
    func subjects() throws {
        let bySID = try self.check(self.set()).get()
        #expect(bySID.kind == .sessionRevoked && bySID.jti == "jti-1")
        #expect(bySID.subject == .init(providerSessionID: "sid-1", subject: nil))
        let byUser = try self.check(
            self.set(["sub_id": ["format": "iss_sub", "iss": .string(TestKeys.issuer), "sub": "alice"]])
        ).get()
        #expect(byUser.subject == .init(providerSessionID: nil, subject: "alice"))
        let both = try self.check(
            self.set([
                "sub_id": [
                    "format": "complex", "session": ["format": "opaque", "id": "sid-2"],
                    "user": ["format": "iss_sub", "iss": .string(TestKeys.issuer), "sub": "bob"],
                ]
            ])
        ).get()
        #expect(both.subject == .init(providerSessionID: "sid-2", subject: "bob"))
        // CAEP drafts carried the subject in the event.
        let inEvent = try self.check(
            self.set(
                ["events": [Self.revoked: ["subject": ["format": "opaque", "id": "sid-3"]]]], remove: ["sub_id"])
        ).get()
        #expect(inEvent.subject.providerSessionID == "sid-3")
        let change = try self.check(
            self.set(["events": [SecurityEvent.Kind.credentialChange.uri: [:]]])
        ).get()
        #expect(change.kind == .credentialChange && change.subject == .init(providerSessionID: nil, subject: "sid-1"))
    }

    @Test("each refusal has its RFC 8935 code, and names a check, never a value")
    func refusals() {
        let other = SignalsConfiguration(issuer: "https://other.test", audience: "gateway")
        let cases: [(String, SecurityEventRefusal.Code)] = [
            (self.set(["aud": "someone-else"]), .invalidAudience),
            (self.set(["aud": ["a", "b"]]), .invalidAudience),
            (self.set(signer: TestKeys.otherRSA), .authenticationFailed),
            (self.set(["iss": "https://unknown.test"]), .invalidIssuer),
            (self.set(typ: "JWT"), .invalidRequest),
            (self.set(["iat": .number(JSONNumber(Int(self.now) - 3600))]), .invalidRequest),
            (self.set(["iat": .number(JSONNumber(Int(self.now) + 3600))]), .invalidRequest),
            (self.set(["exp": .number(JSONNumber(Int(self.now) - 60))]), .invalidRequest),
            (self.set(remove: ["iat"]), .invalidRequest),
            (self.set(remove: ["jti"]), .invalidRequest),
            (self.set(["jti": .string(String(repeating: "j", count: 300))]), .invalidRequest),
            (self.set(remove: ["events"]), .invalidRequest),
            (self.set(["events": ["https://example.com/unknown-event": [:]]]), .invalidRequest),
            (self.set(["sub_id": ["format": "email", "email": "a@example.com"]]), .invalidRequest),
            (self.set(remove: ["sub_id"]), .invalidRequest),
            (Self.unsigned(self.set()), .authenticationFailed),
            ("not a jwt", .invalidRequest),
        ]
        for (token, code) in cases {
            guard case .failure(let refusal) = self.check(token) else {
                Issue.record("must be refused with \(code)")
                continue
            }
            #expect(refusal.code == code, "\(refusal.description)")
            #expect(!refusal.description.contains("someone-else") && !refusal.description.contains("jjjj"))
        }
        // A key of an issuer that is not the transmitter.
        let wrongIssuer = SecurityEventCheck.check(
            self.set(), keys: self.fixture.keys, configuration: other, now: self.now)
        #expect((try? wrongIssuer.get()) == nil)
        if case .failure(let refusal) = wrongIssuer { #expect(refusal.code == .invalidIssuer) }
        let json = SecurityEventRefusal(.invalidKey, "unknown key").json
        #expect(json.jsonText == #"{"err":"invalid_key","description":"unknown key"}"#)
    }

    /// `token` re-made with `alg: none` and no signature.
    static func unsigned(_ token: String) -> String {
        let parts = token.split(separator: ".")
        let header = Base64URL.encode(Array(#"{"alg":"none","typ":"secevent+jwt"}"#.utf8))
        return "\(header).\(parts[1])."
    }
}
