import Crypto
import Foundation
import Testing

@testable import AuthGateway
@testable import AuthGatewayDemo

/// The demo provider's memory of sessions, codes and refresh tokens, event by event with `now`
/// passed in.
@Suite("Demo OpenID Provider: sessions, codes and refresh tokens")
struct DemoOIDCStateTests {
    static let verifier = String(repeating: "v", count: 43)
    static let redirectURI = "http://127.0.0.1:1/cb"

    /// A state with alice signed in (`sid-1`) and a code `c` issued at time 1000.
    static func withCode(expiresAt: Int = 1060) -> DemoOIDCState {
        var state = DemoOIDCState()
        _ = state.startSession(handle: "h", sid: "sid-1", userID: "u-1001", now: 1000)
        state.issueCode(
            "c",
            for: DemoOIDCState.Grant(
                clientID: "gateway", redirectURI: Self.redirectURI, codeChallenge: PKCE.challenge(for: Self.verifier),
                nonce: "n", scope: "openid", sid: "sid-1", userID: "u-1001", authTime: 1000, expiresAt: expiresAt))
        return state
    }

    @Test func aCodeIsRedeemedOnceByItsClientWithItsRedirectURIAndVerifier() throws {
        var state = Self.withCode()
        let first = state.redeem(
            code: "c", clientID: "gateway", redirectURI: Self.redirectURI, verifier: Self.verifier, now: 1010)
        guard case .granted(let grant) = first else {
            Issue.record("refused: \(first)")
            return
        }
        #expect(grant.nonce == "n" && grant.sid == "sid-1")
        #expect(state.sessions["sid-1"]?.clientIDs == ["gateway"], "the client will get a logout token")
        #expect(
            state.redeem(
                code: "c", clientID: "gateway", redirectURI: Self.redirectURI, verifier: Self.verifier, now: 1011)
                == .refused("the code was already used"))
    }

    @Test(
        arguments: [
            (
                "another client", "other", DemoOIDCStateTests.redirectURI, DemoOIDCStateTests.verifier, 1010,
                "the code was issued to another client"
            ),
            (
                "another redirect URI", "gateway", "http://127.0.0.1:1/other", DemoOIDCStateTests.verifier, 1010,
                "redirect_uri differs from the authorization request"
            ),
            ("no verifier", "gateway", DemoOIDCStateTests.redirectURI, nil, 1010, "missing or malformed code_verifier"),
            (
                "a short verifier", "gateway", DemoOIDCStateTests.redirectURI, "short", 1010,
                "missing or malformed code_verifier"
            ),
            (
                "another verifier", "gateway", DemoOIDCStateTests.redirectURI, String(repeating: "w", count: 43), 1010,
                "code_verifier does not match code_challenge"
            ),
            (
                "too late", "gateway", DemoOIDCStateTests.redirectURI, DemoOIDCStateTests.verifier, 1061,
                "the code has expired"
            ),
        ] as [(String, String, String?, String?, Int, String)])
    func aCodeIsRefusedAndSpent(
        _ name: String, _ clientID: String, _ redirectURI: String?, _ verifier: String?, _ now: Int, _ reason: String
    ) {
        var state = Self.withCode()
        #expect(
            state.redeem(code: "c", clientID: clientID, redirectURI: redirectURI, verifier: verifier, now: now)
                == .refused(reason), "\(name)")
        #expect(
            state.redeem(
                code: "c", clientID: "gateway", redirectURI: Self.redirectURI, verifier: Self.verifier, now: now)
                == .refused("the code was already used"), "a refused code cannot be tried again")
    }

    @Test func aReplayedCodeRevokesTheRefreshTokenItsFirstUseGot() throws {
        var state = Self.withCode()
        guard
            case .granted(let grant) = state.redeem(
                code: "c", clientID: "gateway", redirectURI: Self.redirectURI, verifier: Self.verifier, now: 1010)
        else {
            Issue.record("refused")
            return
        }
        state.recordRefreshToken("rt", for: grant, code: "c")
        #expect(state.refreshGrant(token: "rt", clientID: "gateway")?.sid == "sid-1")
        #expect(state.refreshGrant(token: "rt", clientID: "other") == nil, "bound to its client")
        _ = state.redeem(
            code: "c", clientID: "gateway", redirectURI: Self.redirectURI, verifier: Self.verifier, now: 1012)
        #expect(state.refreshGrant(token: "rt", clientID: "gateway") == nil)
    }

    @Test func endingASessionRevokesItsCodesAndRefreshTokens() throws {
        var state = Self.withCode()
        guard
            case .granted(let grant) = state.redeem(
                code: "c", clientID: "gateway", redirectURI: Self.redirectURI, verifier: Self.verifier, now: 1010)
        else {
            Issue.record("refused")
            return
        }
        state.recordRefreshToken("rt", for: grant, code: "c")
        state.issueCode("c2", for: grant)
        let ended = state.endSession(handle: "h")
        #expect(ended?.sid == "sid-1" && ended?.clientIDs == ["gateway"])
        #expect(state.session(handle: "h") == nil)
        #expect(state.refreshGrant(token: "rt", clientID: "gateway") == nil)
        #expect(
            state.redeem(
                code: "c2", clientID: "gateway", redirectURI: Self.redirectURI, verifier: Self.verifier, now: 1011)
                == .refused("unknown code"))
    }

    @Test func sessionsEndBySidOrByUser() {
        var state = DemoOIDCState()
        _ = state.startSession(handle: "h1", sid: "s1", userID: "alice", now: 1)
        _ = state.startSession(handle: "h2", sid: "s2", userID: "alice", now: 2)
        _ = state.startSession(handle: "h3", sid: "s3", userID: "ada", now: 3)
        #expect(state.endSessions(sid: nil, userID: nil).isEmpty)
        #expect(state.endSessions(sid: "s3", userID: "alice").isEmpty, "both given: both must match")
        #expect(state.endSessions(sid: "s1", userID: nil).map(\.sid) == ["s1"])
        #expect(state.endSessions(sid: nil, userID: "alice").map(\.sid) == ["s2"])
        #expect(state.sessions.keys.sorted() == ["s3"])
    }

    @Test func signingInAgainKeepsTheSessionIDAndMovesAuthTime() {
        var state = DemoOIDCState()
        _ = state.startSession(handle: "h", sid: "s", userID: "alice", now: 1)
        #expect(
            state.reauthenticate(handle: "h", now: 5) == DemoOIDCState.Session(sid: "s", userID: "alice", authTime: 5))
        #expect(state.reauthenticate(handle: "unknown", now: 5) == nil)
    }

    /// RFC 7636 appendix B's example.
    @Test func pkceS256MatchesTheRFCExample() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        #expect(PKCE.challenge(for: verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(PKCE.isValidVerifier(verifier) && PKCE.isValidChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
        #expect(!PKCE.isValidVerifier(verifier + "+"))
        #expect(!PKCE.isValidChallenge("plain-challenge"))
    }
}
