import AuthGateway
import Crypto
import Foundation

/// What the demo's OpenID Provider remembers: browser sessions, codes and refresh tokens.
///
/// Pure: no I/O, no clock, no randomness; `now` (Unix seconds) and fresh random values come
/// in as arguments, so the rules (a code is single-use, short-lived and bound to its client,
/// redirect URI and PKCE challenge; ending a session revokes what was issued for it) are tested
/// without sockets. `DemoAuthService` keeps one behind a lock.
struct DemoOIDCState: Sendable {
    /// A browser signed in at the provider; `sid` is the session's id in ID and logout tokens.
    struct Session: Sendable, Equatable {
        var sid: String
        var userID: String
        var authTime: Int
        /// Clients that received tokens in this session: each gets a logout token when it ends.
        var clientIDs: [String] = []
    }

    /// What a code stands for, fixed when `/authorize` issued it.
    struct Grant: Sendable, Equatable {
        var clientID: String
        var redirectURI: String
        var codeChallenge: String
        var nonce: String?
        var scope: String
        var sid: String
        var userID: String
        var authTime: Int
        var expiresAt: Int
    }

    /// What a refresh token stands for.
    struct RefreshGrant: Sendable, Equatable {
        var clientID: String
        var userID: String
        var sid: String
        var scope: String
        var authTime: Int
        /// The code it came from: a replayed code revokes it (RFC 6749 §4.1.2).
        var code: String
    }

    enum Redemption: Equatable {
        case granted(Grant)
        /// `invalid_grant`, with a description safe to show the client.
        case refused(String)
    }

    private(set) var sessions: [String: Session] = [:]
    private var sidByHandle: [String: String] = [:]
    private var codes: [String: Grant] = [:]
    /// Codes already presented, and until when a second presentation is recognised as one.
    private var presentedCodes: [String: Int] = [:]
    static let replayMemorySeconds = 600
    private var refreshTokens: [String: RefreshGrant] = [:]

    /// Signs `userID` in; the browser keeps `handle` in the provider's cookie.
    mutating func startSession(handle: String, sid: String, userID: String, now: Int) -> Session {
        let session = Session(sid: sid, userID: userID, authTime: now)
        self.sessions[sid] = session
        self.sidByHandle[handle] = sid
        return session
    }

    /// The user of the session a provider cookie names signed in again: same `sid`, new `auth_time`.
    mutating func reauthenticate(handle: String, now: Int) -> Session? {
        guard let sid = self.sidByHandle[handle], self.sessions[sid] != nil else { return nil }
        self.sessions[sid]?.authTime = now
        return self.sessions[sid]
    }

    /// The session a provider cookie names, if it has not ended.
    func session(handle: String) -> Session? {
        self.sidByHandle[handle].flatMap { self.sessions[$0] }
    }

    mutating func issueCode(_ code: String, for grant: Grant) {
        self.codes[code] = grant
    }

    /// Presents a code at the token endpoint. Whatever the outcome, the code cannot be used
    /// again; a second presentation also revokes the refresh tokens the first one got.
    mutating func redeem(
        code: String, clientID: String, redirectURI: String?, verifier: String?, now: Int
    )
        -> Redemption
    {
        self.presentedCodes = self.presentedCodes.filter { $0.value >= now }
        if self.presentedCodes[code] != nil {
            self.refreshTokens = self.refreshTokens.filter { $0.value.code != code }
            return .refused("the code was already used")
        }
        guard let grant = self.codes.removeValue(forKey: code) else { return .refused("unknown code") }
        self.presentedCodes[code] = grant.expiresAt + Self.replayMemorySeconds
        guard grant.expiresAt >= now else { return .refused("the code has expired") }
        guard grant.clientID == clientID else { return .refused("the code was issued to another client") }
        guard redirectURI == grant.redirectURI else {
            return .refused("redirect_uri differs from the authorization request")
        }
        guard let verifier, PKCE.isValidVerifier(verifier) else {
            return .refused("missing or malformed code_verifier")
        }
        guard PKCE.challenge(for: verifier) == grant.codeChallenge else {
            return .refused("code_verifier does not match code_challenge")
        }
        guard self.sessions[grant.sid] != nil else { return .refused("the session has ended") }
        if self.sessions[grant.sid]?.clientIDs.contains(clientID) == false {
            self.sessions[grant.sid]?.clientIDs.append(clientID)
        }
        return .granted(grant)
    }

    mutating func recordRefreshToken(_ token: String, for grant: Grant, code: String) {
        self.refreshTokens[token] = RefreshGrant(
            clientID: grant.clientID, userID: grant.userID, sid: grant.sid, scope: grant.scope,
            authTime: grant.authTime, code: code)
    }

    /// A refresh token's grant, when it was issued to `clientID` and its session has not ended.
    func refreshGrant(token: String, clientID: String) -> RefreshGrant? {
        guard let grant = self.refreshTokens[token], grant.clientID == clientID, self.sessions[grant.sid] != nil
        else { return nil }
        return grant
    }

    /// Ends the session a provider cookie names.
    mutating func endSession(handle: String) -> Session? {
        guard let sid = self.sidByHandle[handle] else { return nil }
        return self.endSessions(sid: sid, userID: nil).first
    }

    /// Ends the session `sid` and/or every session of `userID` (both given: the session must
    /// match both; neither: nothing ends), with their codes and refresh tokens.
    mutating func endSessions(sid: String?, userID: String?) -> [Session] {
        guard sid != nil || userID != nil else { return [] }
        let ended = self.sessions.values.filter { session in
            (sid == nil || session.sid == sid) && (userID == nil || session.userID == userID)
        }.sorted { $0.authTime < $1.authTime }
        let sids = Set(ended.map(\.sid))
        for sid in sids { self.sessions[sid] = nil }
        self.sidByHandle = self.sidByHandle.filter { !sids.contains($0.value) }
        self.codes = self.codes.filter { !sids.contains($0.value.sid) }
        self.refreshTokens = self.refreshTokens.filter { !sids.contains($0.value.sid) }
        return ended
    }
}

/// Proof Key for Code Exchange (RFC 7636), `S256` only.
enum PKCE {
    /// 43-128 characters of `[A-Za-z0-9-._~]` (RFC 7636 §4.1).
    static func isValidVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count) && verifier.utf8.allSatisfy(Self.isUnreserved)
    }

    /// A `S256` challenge is the base64url of a SHA-256: 43 characters.
    static func isValidChallenge(_ challenge: String) -> Bool {
        challenge.utf8.count == 43 && challenge.utf8.allSatisfy(Base64URL.isAlphabetByte)
    }

    static func challenge(for verifier: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(verifier.utf8)))
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        Base64URL.isAlphabetByte(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "~")
    }
}

/// Unguessable values: session handles, `sid`s, codes, refresh tokens (256 bits, base64url).
enum DemoSecret {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}
