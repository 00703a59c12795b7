import Crypto
import Foundation
import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The API-key step on its own (docs/policies.md, "API keys"): no I/O, values in, outcomes out.
@Suite("APIKeyAuthentication")
struct APIKeyAuthenticationTests {
    static let key = "agk_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
    static let expiredKey = "agk_expired-expired-expired-expired-expired-ex"

    static func hex(_ key: String) -> String {
        SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture(
            tokens: #"""
                "apiKeys":{"keys":[
                  {"id":"ci-bot","sha256":"\#(Self.hex(Self.key))",
                   "claims":{"sub":"ci-bot","scope":"deploy read","groups":["machines"]},
                   "expires":"2999-01-01T00:00:00Z"},
                  {"id":"old-bot","sha256":"\#(Self.hex(Self.expiredKey).uppercased())",
                   "claims":{"sub":"old-bot"},"expires":"2001-01-01T00:00:00Z"}]}
                """#)
    }

    var step: APIKeyAuthentication {
        APIKeyAuthentication(table: APIKeyTable(self.fixture.configuration.tokens.apiKeys!))
    }

    enum Outcome {
        case identity(Identity)
        case refused(GatewayError)
    }

    /// Extraction, then the step: nil when the request's credential is no key (the other steps').
    private func outcome(_ headers: [(String, String)], auth: RouteConfiguration.AuthMode = .required) -> Outcome? {
        let request = self.fixture.request(headers, route: self.fixture.route(auth: auth))
        let extraction = CredentialExtraction(
            sources: self.fixture.configuration.tokens.sources, apiKeyHeader: self.step.table?.header)
        switch extraction.extract(from: request.headers, auth: auth) {
        case .failure(let error): return .refused(error)
        case .success(.apiKey(let key)):
            let answer = self.step.run(self.fixture.state(.apiKey(key), for: request), request)
            if let identity = answer.next?.identity { return .identity(identity) }
            return answer.refusal.map { .refused($0.error) }
        case .success: return nil
        }
    }

    @Test("a known key is an identity with the key's claims and id, built like a token's")
    func knownKey() throws {
        guard case .identity(let identity) = self.outcome([("X-API-Key", Self.key)]) else {
            Issue.record("the key is accepted")
            return
        }
        #expect(identity.apiKeyID == "ci-bot")
        #expect(identity.token.subject == "ci-bot")
        #expect(identity.issuer == APIKeyTable.issuer)
        #expect(identity.kind == .apiKey)
        let fields = IdentityFields(identity: identity, request: self.fixture.request([]))
        #expect(fields.claim("groups") == ["machines"])
        #expect(fields.claim("scope") == "deploy read")
        // The header name is matched without regard to case.
        guard case .identity = self.outcome([("x-api-key", Self.key)]) else {
            Issue.record("header names are case-insensitive")
            return
        }
    }

    @Test("no key header: the step stands aside (the token sources decide); auth none ignores the key")
    func noKey() {
        #expect(self.outcome([], auth: .optional) == nil)
        #expect(self.outcome([("Authorization", "Bearer x")]) == nil)
        #expect(self.outcome([("X-API-Key", "nonsense")], auth: .none) == nil)
        // A token credential goes past the step as it came.
        let request = self.fixture.request([])
        let token = self.fixture.state(.token(self.fixture.bearer("abc")), for: request)
        #expect(self.step.run(token, request).next?.credential == token.credential)
    }

    @Test("hostile keys are all apikey.invalid: empty, huge, non-ASCII, suffix, prefix, unknown, expired")
    func hostileKeys() {
        let hostile = [
            "", " ", String(repeating: "a", count: 100_000), Self.key + "x", Self.key + " ",
            String(Self.key.dropLast()),
            "agk_é" + String(Self.key.dropFirst(5)), Self.key.replacingOccurrences(of: "_", with: "\u{0}"),
            Self.key.uppercased(), "agk_unknown-key-unknown-key-unknown-key-unknown", Self.expiredKey,
        ]
        for key in hostile {
            guard case .refused(let error) = self.outcome([("X-API-Key", key)]) else {
                Issue.record("\(key.prefix(20)) is refused")
                continue
            }
            #expect(error == .apiKeyInvalid)
            #expect(error.status == .unauthorized)
            #expect(error.errorType == "apikey.invalid")
        }
        // On an optional route a presented key is still a credential that must hold.
        guard case .refused(.apiKeyInvalid) = self.outcome([("X-API-Key", "wrong")], auth: .optional) else {
            Issue.record("optional routes refuse a bad key too")
            return
        }
    }

    @Test("two key lines are invalid; a key with an access token is 400 apikey.ambiguous")
    func ambiguous() {
        guard case .refused(.apiKeyInvalid) = self.outcome([("X-API-Key", Self.key), ("X-API-Key", Self.key)]) else {
            Issue.record("two key lines are refused")
            return
        }
        for token in [("Authorization", "Bearer abc"), ("Cookie", "access_token=abc")] {
            guard case .refused(let error) = self.outcome([("X-API-Key", Self.key), token]) else {
                Issue.record("key plus \(token.0) is refused")
                continue
            }
            #expect(error == .apiKeyAmbiguous)
            #expect(error.status == .badRequest)
        }
    }

    @Test("the pipeline sends a key's identity straight to the requirements, which read its claims")
    func pipeline() throws {
        let pipeline = try self.fixture.pipeline()
        let allowed = self.fixture.route(require: try AuthStepFixture.requirement(["claims.scope": "deploy"]))
        guard
            case .done(.authenticated(let identity)) = pipeline.authenticate(
                self.fixture.request([("X-API-Key", Self.key)], route: allowed))
        else {
            Issue.record("the key passes a requirement on its claims")
            return
        }
        #expect(identity.apiKeyID == "ci-bot")
        let refused = self.fixture.route(require: try AuthStepFixture.requirement(["claims.scope": "admin"]))
        guard
            case .done(.rejected(let error, _)) = pipeline.authenticate(
                self.fixture.request([("X-API-Key", Self.key)], route: refused))
        else {
            Issue.record("a requirement the claims miss refuses")
            return
        }
        #expect(error == .forbidden(#"routes[0].require["claims.scope"]"#))
        guard
            case .done(.rejected(.apiKeyInvalid, _)) = pipeline.authenticate(
                self.fixture.request([("X-API-Key", "bad")], route: allowed))
        else {
            Issue.record("a bad key is refused by the pipeline")
            return
        }
    }

    @Test("the table's timing cannot depend on a shared prefix: lookups go by whole-key digest")
    func digestLookup() {
        let table = APIKeyTable(self.fixture.configuration.tokens.apiKeys!)
        #expect(table.count == 2)
        #expect(table.key(Self.key)?.id == "ci-bot")
        // Every prefix and extension of the key misses, as any unrelated key does.
        for length in [1, 8, 16, 30, 46] { #expect(table.key(String(Self.key.prefix(length))) == nil) }
        #expect(table.key(Self.key + Self.key) == nil)
    }
}
