import NIOCore
import NIOSSL

/// Knobs and records of the demo's OpenID Provider for tests (the gateway's, the real
/// browser's, and the provider's own): what was issued last, how often the token endpoint was
/// called, which logout tokens were delivered and what the relying party answered, and ways to
/// make the next answers go wrong on purpose.
extension DemoAuthService {
    /// How the token endpoint misbehaves while `failTokenEndpoint` is in force.
    public enum TokenEndpointFailure: Sendable, Equatable {
        /// This status (e.g. 503) with `{"error":"temporarily_unavailable"}`.
        case status(Int)
        /// An OAuth error answer `{"error": code}` with this status.
        case error(String, status: Int = 400)
        /// This body as it is, with this status and content type (answers that are not tokens).
        case body(String, status: Int = 200, contentType: String = "application/json")
        /// No answer until `releaseHeldTokenCalls()` (a provider too slow for the gateway).
        case hold
        /// The connection closed without an answer (a provider that went down mid-call).
        case hangUp
    }

    /// How the next ID token is spoiled (each makes a correct relying party refuse it).
    public enum IDTokenTampering: Sendable, Equatable {
        case wrongNonce
        case missingNonce
        case wrongAudience
        case wrongIssuer
        case expired
        /// Signed, but one byte of the signature flipped.
        case badSignature
    }

    /// What the token endpoint answered last with success.
    public struct IssuedTokens: Sendable, Equatable {
        public var grantType: String
        public var clientID: String
        public var sid: String
        public var accessToken: String
        public var idToken: String
        /// Only from `authorization_code` (refresh tokens are not rotated).
        public var refreshToken: String?
    }

    /// Calls of `POST /token`, failed ones included.
    public struct TokenCalls: Sendable, Equatable {
        public var total = 0
        public var authorizationCode = 0
        public var refreshToken = 0

        public init(total: Int = 0, authorizationCode: Int = 0, refreshToken: Int = 0) {
            self.total = total
            self.authorizationCode = authorizationCode
            self.refreshToken = refreshToken
        }
    }

    /// A browser's session at the provider.
    public struct ProviderSession: Sendable, Equatable {
        public var sid: String
        /// The user's id (`sub` of the tokens).
        public var sub: String
        public var authTime: Int
        /// Clients that got tokens in this session (they get logout tokens when it ends).
        public var clientIDs: [String]
    }

    /// One logout token posted to a relying party's back-channel logout URI.
    public struct BackChannelDelivery: Sendable, Equatable {
        public var clientID: String
        public var uri: String
        public var sid: String?
        public var sub: String?
        public var logoutToken: String
        /// The relying party's HTTP status; nil when it did not answer (see `failure`).
        public var status: Int?
        public var failure: String?
    }

    /// The state behind the hooks (one lock, apart from the provider's own state).
    struct TestRecords: Sendable {
        var tokenFailure: TokenEndpointFailure?
        /// How many more calls fail; nil: until cleared.
        var tokenFailuresLeft: Int?
        var nextIDTokenTampering: IDTokenTampering?
        var lastCode: String?
        var lastCodeVerifier: String?
        var lastTokens: IssuedTokens?
        var tokenCalls = TokenCalls()
        var userinfoCalls = 0
        var lastAuthorization: [String: String] = [:]
        var deliveries: [BackChannelDelivery] = []
        var skipsLoginFormWhenSignedIn = true
        var backChannelTLS: NIOSSLContext?
        /// Token calls held by `TokenEndpointFailure.hold`, answered by `releaseHeldTokenCalls()`.
        var heldTokenCalls: [EventLoopPromise<SimpleResponse>] = []

        /// The failure for this token call, counting it down.
        mutating func takeTokenFailure() -> TokenEndpointFailure? {
            guard let failure = self.tokenFailure else { return nil }
            if let left = self.tokenFailuresLeft {
                self.tokenFailuresLeft = left - 1
                if left <= 1 { self.tokenFailure = nil }
            }
            return failure
        }
    }

    /// Makes the next `times` token calls (every one until cleared with nil, when `times` is
    /// nil) answer `failure` instead of tokens.
    public func failTokenEndpoint(_ failure: TokenEndpointFailure?, times: Int? = nil) {
        self.records.withLockedValue {
            $0.tokenFailure = failure
            $0.tokenFailuresLeft = times
        }
    }

    /// Answers every token call held by `.hold` (503), and how many there were.
    @discardableResult
    public func releaseHeldTokenCalls() -> Int {
        let held = self.records.withLockedValue { records in
            defer { records.heldTokenCalls = [] }
            return records.heldTokenCalls
        }
        for promise in held {
            promise.succeed(.json(.serviceUnavailable, ["error": "temporarily_unavailable"]))
        }
        return held.count
    }

    /// How many token calls `.hold` holds now.
    public var heldTokenCallCount: Int { self.records.withLockedValue { $0.heldTokenCalls.count } }

    /// Spoils the next ID token the token endpoint issues (code or refresh).
    /// Issues and checks tokens on `clock` (Unix seconds) instead of the real time: a test that
    /// moves the gateway's clock moves the provider's with it.
    public func useClock(_ clock: @escaping @Sendable () -> Double) {
        self.clockBox.withLockedValue { $0 = clock }
    }

    public func tamperNextIDToken(_ tampering: IDTokenTampering?) {
        self.records.withLockedValue { $0.nextIDTokenTampering = tampering }
    }

    /// Whether `/authorize` skips the form for a browser with a provider session (single
    /// sign-on, the default); `prompt=login` always shows it.
    public var skipsLoginFormWhenSignedIn: Bool {
        get { self.records.withLockedValue { $0.skipsLoginFormWhenSignedIn } }
        set { self.records.withLockedValue { $0.skipsLoginFormWhenSignedIn = newValue } }
    }

    /// How logout tokens are sent to `https` back-channel URIs (default: the system's trust).
    public func useBackChannelTLS(_ context: NIOSSLContext?) {
        self.records.withLockedValue { $0.backChannelTLS = context }
    }

    /// The last code `/authorize` issued.
    public var lastIssuedCode: String? { self.records.withLockedValue { $0.lastCode } }
    /// The PKCE `code_verifier` of the last code redemption (a relying party's secret: tests
    /// check that it is never logged).
    public var lastCodeVerifier: String? { self.records.withLockedValue { $0.lastCodeVerifier } }
    /// The last successful token answer.
    public var lastIssuedTokens: IssuedTokens? { self.records.withLockedValue { $0.lastTokens } }
    public var tokenCalls: TokenCalls { self.records.withLockedValue { $0.tokenCalls } }
    public var userinfoCalls: Int { self.records.withLockedValue { $0.userinfoCalls } }
    /// The parameters of the last `/authorize` request (the password left out): what a relying
    /// party sent (its `code_challenge_method`, `nonce`, `state`, …).
    public var lastAuthorizationParameters: [String: String] {
        self.records.withLockedValue { $0.lastAuthorization }
    }
    /// Every logout token delivered so far, oldest first, with the relying party's answer.
    public var backChannelDeliveries: [BackChannelDelivery] { self.records.withLockedValue { $0.deliveries } }

    /// The provider sessions that have not ended.
    public var providerSessions: [ProviderSession] {
        self.state.withLockedValue { state in
            state.sessions.values.sorted { $0.authTime < $1.authTime }.map {
                ProviderSession(sid: $0.sid, sub: $0.userID, authTime: $0.authTime, clientIDs: $0.clientIDs)
            }
        }
    }
}
