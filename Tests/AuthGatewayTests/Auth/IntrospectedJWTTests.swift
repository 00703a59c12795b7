import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// `tokens.introspection.forJWTs`: a verified JWT is introspected too; its own claims stay the
/// request's claims, and the answer's `cnf.jkt` may add a DPoP binding, never weaken one.
@Suite("forJWTs: a verified JWT and its introspection answer")
struct IntrospectedJWTTests {
    static func token(_ claims: JSONObject) -> VerifiedToken {
        VerifiedToken(
            issuerIndex: 0, generation: 3, claims: claims, subject: claims["sub"]?.stringValue,
            expiresAt: 2_000_000_000, notBefore: nil, issuedAt: 1_700_000_000,
            leewaySeconds: 5
        )
    }

    @Test func theJWTsClaimsWinOverTheAnswers() throws {
        let jwt = Self.token(["sub": "alice", "scope": "read", "iss": "https://idp"])
        let answer: JSONObject = [
            "active": true, "sub": "mallory", "scope": "admin", "username": "alice", "exp": 2_000_000_000,
        ]
        let adopted = try #require(IntrospectedJWT.adopt(jwt, answer: answer))
        #expect(adopted === jwt)
        #expect(adopted.claims["sub"] == "alice")
        #expect(adopted.claims["scope"] == "read")
        #expect(adopted.claims["username"] == nil)
    }

    @Test func aBindingInTheAnswerIsAddedToAnUnboundJWT() throws {
        let jwt = Self.token(["sub": "alice", "cnf": ["x5t#S256": "cert-thumbprint"]])
        let adopted = try #require(IntrospectedJWT.adopt(jwt, answer: ["active": true, "cnf": ["jkt": "key-1"]]))
        #expect(adopted.claims["cnf"] == ["x5t#S256": "cert-thumbprint", "jkt": "key-1"])
        #expect(adopted.claims["sub"] == "alice")
        #expect(adopted.subject == "alice")
        #expect(
            adopted.issuerIndex == 0 && adopted.generation == 3 && adopted.expiresAt == 2_000_000_000
                && adopted.leewaySeconds == 5)
        let bare = Self.token(["sub": "bob"])
        #expect(
            IntrospectedJWT.adopt(bare, answer: ["active": true, "cnf": ["jkt": "key-2"]])?.claims["cnf"] == [
                "jkt": "key-2"
            ])
    }

    @Test func aBindingOfTheJWTIsNeverRemovedOrReplaced() throws {
        let bound = Self.token(["sub": "alice", "cnf": ["jkt": "key-1"]])
        // No cnf, or a cnf without jkt, in the answer: the JWT's binding stays.
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true]) === bound)
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["x5t#S256": "c"]]) === bound)
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["jkt": "key-1"]]) === bound)
        // Another key, or a jkt that is not a usable string: refused.
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["jkt": "key-2"]]) == nil)
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["jkt": 42]]) == nil)
        #expect(IntrospectedJWT.adopt(Self.token(["sub": "x"]), answer: ["active": true, "cnf": ["jkt": ""]]) == nil)
    }

    // MARK: The phases, with forJWTs on

    let configuration: GatewayConfiguration
    let authenticator: RequestAuthenticator
    let introspector: TokenIntrospector
    let keys: KeySnapshot
    let now = Date().timeIntervalSince1970

    init() throws {
        let text = """
            {"listener":{},"backends":{"api":{"urls":["http://127.0.0.1:1"]}},
             "tokens":{"issuers":[{"issuer":"\(TestKeys.issuer)","audiences":["\(TestKeys.audience)"],"leewaySeconds":0,
               "keys":[{"kid":"test-rs","algorithm":"RS256","publicKeyPEM":\(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]}],
               "introspection":{"url":"http://127.0.0.1:1/introspect","forJWTs":true}},
             "routes":[{"name":"default","pathPrefix":"/","backend":"api"}]}
            """
        self.configuration = try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
        let metrics = ProcessMetrics()
        let keyStore = KeyStore(
            configuration: self.configuration.tokens, metrics: metrics, clock: { 0 }, publish: { _ in })
        self.keys = keyStore.snapshot
        self.introspector = TokenIntrospector(
            configuration: self.configuration.tokens.introspection!, capacity: 16, metrics: metrics, clock: { 0 })
        self.authenticator = RequestAuthenticator(configuration: self.configuration, introspector: self.introspector)
    }

    func identity(_ token: String) throws -> (Identity, ExtractedToken) {
        guard case .success(let verified) = VerifiedTokenCache(capacity: 4).verify(token[...], keys: self.keys) else {
            throw IntrospectedJWTFailure()
        }
        let extracted = ExtractedToken(value: token[...], location: .header(name: "Authorization", bearer: true))
        return (Identity(token: verified, accessToken: extracted, issuer: TestKeys.issuer), extracted)
    }

    struct IntrospectedJWTFailure: Error {}

    @Test("checkTime: with forJWTs a current JWT goes to introspection, carrying its verified identity")
    func checkTimeSendsAVerifiedJWTToIntrospection() throws {
        let (identity, extracted) = try self.identity(TestKeys.token(subject: "alice"))
        let request = AuthRequest(
            headers: HTTPHeaders([("Authorization", "Bearer \(extracted.value)")]), route: self.configuration.routes[0],
            keys: self.keys, now: self.now, isTLS: false)
        guard
            case .next(.introspect(let token, let verified?)) = self.authenticator.checkTime(
                identity.token, extracted, keys: self.keys, request)
        else {
            Issue.record("a verified JWT must go to introspection with forJWTs")
            return
        }
        #expect(token.value == extracted.value)
        #expect(verified.token === identity.token)
        #expect(verified.issuer == TestKeys.issuer)
    }

    @Test(
        "adoptIntrospection: inactive is 401 token.inactive, unavailable 503; active keeps the JWT's claims and remembers them"
    )
    func adoptKeepsTheJWTsClaims() throws {
        let (identity, extracted) = try self.identity(TestKeys.token(subject: "alice"))
        guard
            case .done(.rejected(let inactive, _)) = self.authenticator.adoptIntrospection(
                .inactive(validUntil: self.now + 5), extracted, verified: identity)
        else {
            Issue.record("inactive must be refused")
            return
        }
        #expect(inactive == .tokenInactive)
        guard
            case .done(.rejected(let unavailable, _)) = self.authenticator.adoptIntrospection(
                .unavailable, extracted, verified: identity)
        else {
            Issue.record("unavailable must be refused")
            return
        }
        #expect(unavailable == .introspectionUnavailable)

        let memo = RecentIntrospections()
        let answer: JSONObject = ["active": true, "sub": "someone-else", "scope": "admin"]
        guard
            case .next(.proofOfPossession(let adopted)) = self.authenticator.adoptIntrospection(
                .active(claims: answer, validUntil: self.now + 30), extracted, verified: identity, memo: memo
            )
        else {
            Issue.record("active must go on to proof of possession")
            return
        }
        #expect(adopted.token.subject == "alice")
        #expect(adopted.token.claims["sub"] == "alice")
        #expect(adopted.token.claims["scope"] == identity.token.claims["scope"])
        #expect(adopted.issuer == TestKeys.issuer)
        // The loop's memo answers the next request with the same claims, until validUntil.
        #expect(memo.lookup(extracted.value, introspector: self.introspector, now: self.now)?.claims["sub"] == "alice")
        #expect(memo.lookup(extracted.value, introspector: self.introspector, now: self.now + 31) == nil)
    }

    @Test("adoptIntrospection: an answer binding the JWT to another key than its own is refused, never forwarded")
    func adoptRefusesAContradictingBinding() throws {
        let (identity, extracted) = try self.identity(
            TestKeys.token(subject: "alice", extra: ["cnf": ["jkt": "key-1"]]))
        guard
            case .done(.rejected(let error, _)) = self.authenticator.adoptIntrospection(
                .active(claims: ["active": true, "cnf": ["jkt": "key-2"]], validUntil: self.now + 30), extracted,
                verified: identity
            )
        else {
            Issue.record("a contradicting binding must be refused")
            return
        }
        #expect(error == .tokenRejected(.invalidClaim))
        // The answer's binding added to an unbound JWT makes it need a DPoP proof.
        let (unbound, plain) = try self.identity(TestKeys.token(subject: "bob"))
        guard
            case .next(.proofOfPossession(let bound)) = self.authenticator.adoptIntrospection(
                .active(claims: ["active": true, "cnf": ["jkt": "key-3"]], validUntil: self.now + 30), plain,
                verified: unbound
            )
        else {
            Issue.record("an added binding goes on to proof of possession")
            return
        }
        let request = AuthRequest(
            headers: HTTPHeaders([("Authorization", "Bearer \(plain.value)")]), route: self.configuration.routes[0],
            keys: self.keys, now: self.now, isTLS: false)
        let services = AuthServices(
            eventLoop: EmbeddedEventLoop(), verifiedTokens: VerifiedTokenCache(capacity: 4),
            recentTokens: RecentTokens(),
            keyStore: KeyStore(
                configuration: self.configuration.tokens, metrics: ProcessMetrics(), clock: { 0 }, publish: { _ in }),
            endpoints: AuthServiceEndpoints(),
            clients: { _ in nil }, metrics: WorkerMetrics()
        )
        guard
            case .done(.rejected(let required, _)) = self.authenticator.checkProofOfPossession(bound, request, services)
        else {
            Issue.record("a token bound by the answer, sent as Bearer, must be refused")
            return
        }
        #expect(required == .dpopRequired(algs: self.authenticator.dpopAlgorithms))
    }
}
