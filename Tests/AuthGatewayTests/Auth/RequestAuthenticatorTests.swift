import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// `RequestAuthenticator` phase by phase, without sockets: each phase is called with values
/// and its `AuthStep` checked.
@Suite("RequestAuthenticator phases")
struct RequestAuthenticatorTests {
    let configuration: GatewayConfiguration
    let authenticator: RequestAuthenticator
    let services: AuthServices
    let keys: KeySnapshot
    let now = Date().timeIntervalSince1970

    init() throws {
        let text = """
            {"listener":{},"backends":{"api":{"urls":["http://127.0.0.1:1"]}},
             "tokens":{"issuers":[{"issuer":"\(TestKeys.issuer)","audiences":["\(TestKeys.audience)"],"leewaySeconds":0,
               "keys":[{"kid":"test-rs","algorithm":"RS256","publicKeyPEM":\(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]}]},
             "authService":{"url":"http://127.0.0.1:1","refresh":{"maxExpiredSeconds":3600},
               "profile":{"path":"/v1/user"}},
             "routes":[{"name":"default","pathPrefix":"/","backend":"api"}]}
            """
        self.configuration = try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
        let metrics = ProcessMetrics()
        let keyStore = KeyStore(
            configuration: self.configuration.tokens, metrics: metrics, clock: { 0 }, publish: { _ in })
        self.keys = keyStore.snapshot
        let refresher = SessionRefresher(
            configuration: self.configuration.authService!.refresh!, callTimeoutMilliseconds: 1000,
            store: LocalRefreshStore(clock: { 0 }), metrics: metrics, clock: { 0 })
        self.authenticator = RequestAuthenticator(configuration: self.configuration, refresher: refresher)
        self.services = AuthServices(
            eventLoop: EmbeddedEventLoop(), verifiedTokens: VerifiedTokenCache(capacity: 16),
            recentTokens: RecentTokens(), keyStore: keyStore,
            endpoints: AuthServiceEndpoints(), clients: { _ in nil }, metrics: WorkerMetrics()
        )
    }

    private func route(auth: RouteConfiguration.AuthMode = .required, require: [Requirement] = []) -> RouteConfiguration
    {
        RouteConfiguration(
            name: "r", host: nil, pathMatch: .prefix("/"), methods: nil, backend: "api", auth: auth, require: require,
            stripPathPrefix: false, forwardAccessToken: true)
    }

    private func request(
        _ headers: [(String, String)], route: RouteConfiguration? = nil, isTLS: Bool = false
    ) -> AuthRequest {
        AuthRequest(
            headers: HTTPHeaders(headers), route: route ?? self.route(), keys: self.keys, now: self.now, isTLS: isTLS)
    }

    private func verified(_ token: String) throws -> VerifiedToken {
        guard case .success(let verified) = self.services.verifiedTokens.verify(token[...], keys: self.keys) else {
            throw TestFailure("the test token must verify")
        }
        return verified
    }

    struct TestFailure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    // MARK: extract

    @Test(
        "extract: a token goes on to verification; none is refused, or anonymous on an optional route; two differ → ambiguous"
    )
    func extract() {
        let token = TestKeys.token()
        guard
            case .next(.verify(let found, _)) = self.authenticator.extract(
                self.request([("Authorization", "Bearer \(token)")]))
        else {
            Issue.record("a token must go on to verify")
            return
        }
        #expect(found.value == token[...])
        guard case .done(.rejected(let missing, _)) = self.authenticator.extract(self.request([])) else {
            Issue.record("no token on a required route is refused")
            return
        }
        #expect(missing == .tokenMissing)
        guard case .done(.anonymous) = self.authenticator.extract(self.request([], route: self.route(auth: .optional)))
        else {
            Issue.record("no token on an optional route is anonymous")
            return
        }
        guard
            case .done(.anonymous) = self.authenticator.extract(
                self.request([("Authorization", "garbage")], route: self.route(auth: .none)))
        else {
            Issue.record("auth none never looks at tokens")
            return
        }
        let two = self.request([
            ("Authorization", "Bearer \(token)"), ("Cookie", "access_token=\(TestKeys.token(subject: "other"))"),
        ])
        guard case .done(.rejected(let ambiguous, _)) = self.authenticator.extract(two) else {
            Issue.record("two different tokens are ambiguous")
            return
        }
        #expect(ambiguous == .ambiguousToken)
    }

    // MARK: verify

    @Test(
        "verify: a good signature goes on to the clock; a bad one is refused; an unknown kid without a JWKS is refused")
    func verify() {
        let good = ExtractedToken(value: TestKeys.token()[...], location: .header(name: "Authorization", bearer: true))
        guard case .next(.checkTime(_, _, _)) = self.authenticator.verify(good, keys: self.keys, self.services) else {
            Issue.record("a valid token goes on to checkTime")
            return
        }
        let forged = ExtractedToken(
            value: TestKeys.token(signer: TestKeys.otherRSA)[...],
            location: .header(name: "Authorization", bearer: true))
        guard case .done(.rejected(let error, _)) = self.authenticator.verify(forged, keys: self.keys, self.services)
        else {
            Issue.record("a forged token is refused")
            return
        }
        #expect(error == .tokenRejected(.badSignature))
        let unknownKid = try! JWTSigner.generateRS256(kid: "nobody")
        let unknown = ExtractedToken(
            value: TestKeys.token(signer: unknownKid)[...], location: .header(name: "Authorization", bearer: true))
        guard
            case .done(.rejected(let unknownError, _)) = self.authenticator.verify(
                unknown, keys: self.keys, self.services)
        else {
            Issue.record("an unknown kid of static keys is refused at once")
            return
        }
        #expect(unknownError == .tokenRejected(.unknownKey))
    }

    // MARK: checkTime

    @Test("checkTime: a valid token goes on to the proof-of-possession phase with its issuer")
    func validToken() throws {
        let token = TestKeys.token()
        let extracted = ExtractedToken(value: token[...], location: .header(name: "Authorization", bearer: true))
        guard
            case .next(.proofOfPossession(let identity)) = self.authenticator.checkTime(
                try self.verified(token), extracted, keys: self.keys, self.request([]))
        else {
            Issue.record("a valid token goes on to proof of possession (then profile)")
            return
        }
        #expect(identity.issuer == TestKeys.issuer)
        #expect(identity.token.subject == "user-42")
    }

    @Test("checkTime: an expired token with a refresh token goes on to refresh; without one, or too old, it is refused")
    func expiredToken() throws {
        let expired = TestKeys.token(now: self.now, expiresIn: -60)
        let extracted = ExtractedToken(value: expired[...], location: .header(name: "Authorization", bearer: true))
        let withRefresh = self.request([("X-Refresh-Token", "rt-1")])
        guard
            case .next(.refresh(_, _, let refresh, _)) = self.authenticator.checkTime(
                try self.verified(expired), extracted, keys: self.keys, withRefresh)
        else {
            Issue.record("an expired token with a refresh token goes on to refresh")
            return
        }
        #expect(refresh.value == "rt-1")
        guard
            case .done(.rejected(let error, _)) = self.authenticator.checkTime(
                try self.verified(expired), extracted, keys: self.keys, self.request([]))
        else {
            Issue.record("without a refresh token an expired token is refused")
            return
        }
        #expect(error == .tokenRejected(.expired))
        let ancient = TestKeys.token(now: self.now, expiresIn: -7200)
        let old = ExtractedToken(value: ancient[...], location: .header(name: "Authorization", bearer: true))
        guard
            case .done(.rejected(let tooOld, _)) = self.authenticator.checkTime(
                try self.verified(ancient), old, keys: self.keys, withRefresh)
        else {
            Issue.record("past maxExpiredSeconds no refresh is tried")
            return
        }
        #expect(tooOld == .tokenRejected(.expired))
    }

    // MARK: adoptRefresh

    @Test("adoptRefresh: a refusal of a cookie session clears both cookies; unavailable is 503 and clears nothing")
    func refusedRefresh() {
        let access = ExtractedToken(value: "old-access", location: .cookie(name: "access_token"))
        let refresh = ExtractedToken(value: "rt-1", location: .cookie(name: "refresh_token"))
        guard
            case .done(.rejected(let error, let headers)) = self.authenticator.adoptRefresh(
                .rejected, access: access, refresh: refresh, keys: self.keys, self.request([]), self.services)
        else {
            Issue.record("a refused refresh is a rejection")
            return
        }
        #expect(error == .refreshRejected)
        #expect(headers.map(\.value).contains { $0.hasPrefix("access_token=;") && $0.contains("Max-Age=0") })
        #expect(headers.map(\.value).contains { $0.hasPrefix("refresh_token=;") && $0.contains("Max-Age=0") })
        guard
            case .done(.rejected(let unavailable, let none)) = self.authenticator.adoptRefresh(
                .unavailable, access: access, refresh: refresh, keys: self.keys, self.request([]), self.services)
        else {
            Issue.record("an unavailable auth service is a rejection")
            return
        }
        #expect(unavailable == .authServiceUnavailable)
        #expect(none.isEmpty)
    }

    @Test("adoptRefresh: the new token replaces the old one and goes back in headers (rotated refresh token too)")
    func adoptedRefresh() {
        let access = ExtractedToken(value: "old-access", location: .header(name: "Authorization", bearer: true))
        let refresh = ExtractedToken(value: "rt-1", location: .header(name: "X-Refresh-Token", bearer: false))
        let newToken = TestKeys.token(subject: "hank")
        let outcome = RefreshOutcome.refreshed(accessToken: newToken, refreshToken: "rt-2")
        guard
            case .next(.proofOfPossession(let identity)) = self.authenticator.adoptRefresh(
                outcome, access: access, refresh: refresh, keys: self.keys, self.request([]), self.services)
        else {
            Issue.record("an adopted refresh goes on to proof of possession (then profile)")
            return
        }
        #expect(identity.replacementAccessToken == newToken)
        #expect(identity.token.subject == "hank")
        #expect(identity.responseHeaders.map(\.name) == ["X-Access-Token", "X-Refresh-Token"])
        #expect(identity.responseHeaders.map(\.value) == [newToken, "rt-2"])
    }

    @Test("adoptRefresh: a new token that does not verify is refused (misconfiguration), never forwarded")
    func unverifiableNewToken() {
        let access = ExtractedToken(value: "old-access", location: .header(name: "Authorization", bearer: true))
        let refresh = ExtractedToken(value: "rt-1", location: .header(name: "X-Refresh-Token", bearer: false))
        let forged = RefreshOutcome.refreshed(accessToken: TestKeys.token(signer: TestKeys.otherRSA), refreshToken: nil)
        guard
            case .done(.rejected(let error, _)) = self.authenticator.adoptRefresh(
                forged, access: access, refresh: refresh, keys: self.keys, self.request([]), self.services)
        else {
            Issue.record("an unverifiable new token is refused")
            return
        }
        #expect(error == .refreshRejected)
        // The refresh token was spent: a cookie session is signed out.
        let cookieAccess = ExtractedToken(value: "old-access", location: .cookie(name: "access_token"))
        let cookieRefresh = ExtractedToken(value: "rt-1", location: .cookie(name: "refresh_token"))
        guard
            case .done(.rejected(_, let headers)) = self.authenticator.adoptRefresh(
                forged, access: cookieAccess, refresh: cookieRefresh, keys: self.keys, self.request([]), self.services)
        else {
            Issue.record("an unverifiable new token is refused")
            return
        }
        #expect(headers.filter { $0.name == "Set-Cookie" && $0.value.contains("Max-Age=0") }.count == 2)
    }

    // MARK: profile and requirements

    @Test("profile: skipped when nothing needs it; requirements then decide")
    func requirements() throws {
        let token = TestKeys.token(extra: ["roles": ["reader"]])
        let identity = Identity(
            token: try self.verified(token),
            accessToken: ExtractedToken(value: token[...], location: .cookie(name: "a")), issuer: TestKeys.issuer)
        guard case .next(.requirements) = self.authenticator.profile(identity, self.request([]), self.services) else {
            Issue.record("without profile.* anywhere the profile phase is skipped")
            return
        }
        let admin = self.route(require: [
            Requirement(path: IdentityValuePath(source: .claims, name: "roles"), expected: .string("admin"))
        ])
        guard case .rejected(let error, _) = RequestAuthenticator.checkRequirements(identity, route: admin) else {
            Issue.record("a missing role is forbidden")
            return
        }
        #expect(error == .forbidden("claims.roles"))
        let reader = self.route(require: [
            Requirement(path: IdentityValuePath(source: .claims, name: "roles"), expected: .string("reader"))
        ])
        guard case .authenticated = RequestAuthenticator.checkRequirements(identity, route: reader) else {
            Issue.record("a present role passes")
            return
        }
    }

    @Test("the driver runs the synchronous phases to the end without a future")
    func driver() {
        guard
            case .done(.authenticated(let identity)) = self.authenticator.authenticate(
                self.request([("Authorization", "Bearer \(TestKeys.token(subject: "ivy"))")]), services: self.services)
        else {
            Issue.record("a valid token is authenticated synchronously")
            return
        }
        #expect(identity.token.subject == "ivy")
    }

    // MARK: proofOfPossession (SPEC §4.14; the proofs themselves: DPoPProofTests, DPoPTests)

    private func identity(_ token: String, dpopScheme: Bool) throws -> Identity {
        let extracted = ExtractedToken(
            value: token[...], location: .header(name: "Authorization", bearer: true), dpopScheme: dpopScheme)
        return Identity(token: try self.verified(token), accessToken: extracted, issuer: TestKeys.issuer)
    }

    private func dpopRoute(_ mode: RouteConfiguration.DPoPMode) -> RouteConfiguration {
        var route = self.route()
        route.dpop = mode
        return route
    }

    @Test("proofOfPossession: an unbound bearer token goes on to profile unless the route requires DPoP")
    func unboundTokens() throws {
        let bearer = try self.identity(TestKeys.token(), dpopScheme: false)
        guard
            case .next(.profile) = self.authenticator.checkProofOfPossession(
                bearer, self.request([], route: self.dpopRoute(.allowed)), self.services)
        else {
            Issue.record("an unbound bearer token passes on an allowed route")
            return
        }
        guard
            case .done(.rejected(let error, _)) = self.authenticator.checkProofOfPossession(
                bearer, self.request([], route: self.dpopRoute(.required)), self.services)
        else {
            Issue.record("a required route refuses an unbound token")
            return
        }
        #expect(error.errorType == "dpop.required")
        #expect(error.wwwAuthenticate == "DPoP algs=\"ES256 RS256 PS256 EdDSA\"")
        let asDPoP = try self.identity(TestKeys.token(), dpopScheme: true)
        guard
            case .done(.rejected(let invalid, _)) = self.authenticator.checkProofOfPossession(
                asDPoP, self.request([]), self.services)
        else {
            Issue.record("the DPoP scheme is for bound tokens only")
            return
        }
        #expect(invalid.errorType == "dpop.invalid_proof")
    }

    @Test("proofOfPossession: a bound token needs the DPoP scheme and one proof; off ignores the binding")
    func boundTokens() throws {
        let bound = TestKeys.token(extra: ["cnf": ["jkt": "some-thumbprint"]])
        let asBearer = try self.identity(bound, dpopScheme: false)
        guard
            case .done(.rejected(let error, _)) = self.authenticator.checkProofOfPossession(
                asBearer, self.request([]), self.services)
        else {
            Issue.record("a bound token as bearer is refused")
            return
        }
        #expect(error.errorType == "dpop.required")
        let asDPoP = try self.identity(bound, dpopScheme: true)
        guard
            case .done(.rejected(let missing, _)) = self.authenticator.checkProofOfPossession(
                asDPoP, self.request([]), self.services)
        else {
            Issue.record("a bound token without a proof is refused")
            return
        }
        #expect(missing.errorType == "dpop.required")
        guard
            case .done(.rejected(let twice, _)) = self.authenticator.checkProofOfPossession(
                asDPoP, self.request([("DPoP", "a.b.c"), ("DPoP", "a.b.c")]), self.services)
        else {
            Issue.record("two proofs are refused")
            return
        }
        #expect(twice.detail == "The DPoP proof failed its check: more than one DPoP header")
        guard
            case .done(.rejected(let garbage, _)) = self.authenticator.checkProofOfPossession(
                asDPoP, self.request([("DPoP", "garbage")]), self.services)
        else {
            Issue.record("a proof that is no JWS is refused")
            return
        }
        #expect(garbage.detail == "The DPoP proof failed its check: not a JWS")
        guard
            case .next(.profile) = self.authenticator.checkProofOfPossession(
                asBearer, self.request([], route: self.dpopRoute(.off)), self.services)
        else {
            Issue.record("dpop: off ignores cnf.jkt")
            return
        }
    }
}
