import NIOCore

/// The caches that remember a decision about a subject, which a `credential-change` or
/// `token-claims-change` event empties so that the subject's next request is decided afresh
/// (docs/streams.md): verified tokens, introspection answers, profiles, refresh outcomes and
/// exchanged tokens (docs/token-exchange.md).
struct SubjectCaches: Sendable {
    let verifiedTokens: VerifiedTokenCache
    let introspector: TokenIntrospector?
    let profiles: ProfileCache?
    let refreshStore: RefreshStore
    /// nil: none to forget (a test's).
    var exchangeStore: ExchangeStore? = nil
    /// Advanced after each forgetting, so that every loop's memos stop answering what they
    /// held (`SubjectChanges`); nil in tests without loops.
    var subjectChanges: SubjectChanges? = nil

    /// Forgets what the caches remember of `subject`; returns how many entries went.
    @discardableResult
    func forget(subject: String) -> Int {
        let forgotten =
            self.verifiedTokens.forget(subject: subject) + (self.introspector?.forget(subject: subject) ?? 0)
            + (self.profiles?.forget(subject: subject) ?? 0) + self.refreshStore.forget(subject: subject)
            + (self.exchangeStore?.forget { Self.isJWT($0, of: subject) } ?? 0)
        self.subjectChanges?.advance()
        return forgotten
    }

    /// An exchanged token is selected by its own `sub` (the cache is keyed by the subject
    /// token's digest): its payload read unchecked, only to choose what to forget. An opaque
    /// one is never selected.
    static func isJWT(_ token: String, of subject: String) -> Bool {
        CompactJWS.storedPayload(token[...])?["sub"] == .string(subject)
    }
}

/// The Shared Signals receiver (docs/streams.md): takes a pushed SET, checks it
/// (`SecurityEventCheck`), uses its `jti` once — here and, with `sharedState`, fleet-wide, as
/// back-channel logout does — and acts: `session-revoked` ends the sessions it names on every
/// instance (and their streams with them); `credential-change` and `token-claims-change` empty
/// the subject's caches. Built per configuration; safe from any loop.
final class SignalReceiver: Sendable {
    enum Answer: Sendable, Equatable {
        case accepted(SecurityEvent)
        case refused(SecurityEventRefusal)
    }

    let configuration: SignalsConfiguration
    private let sessions: SessionStore
    private let seen: ReplayCache
    private let sharedSeen: SharedDPoPReplay?
    private let caches: SubjectCaches
    private let metrics: ProcessMetrics
    private let clock: @Sendable () -> Double

    init(
        configuration: SignalsConfiguration, sessions: SessionStore, seen: ReplayCache, sharedSeen: SharedDPoPReplay?,
        caches: SubjectCaches, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double
    ) {
        self.configuration = configuration
        self.sessions = sessions
        self.seen = seen
        self.sharedSeen = sharedSeen
        self.caches = caches
        self.metrics = metrics
        self.clock = clock
    }

    /// Checks `token` with `keys`, uses its `jti` once, and acts on it; the answer completes on
    /// `eventLoop`.
    func receive(_ token: String, keys: KeySnapshot, on eventLoop: EventLoop) -> EventLoopFuture<Answer> {
        let now = self.clock()
        let event: SecurityEvent
        switch SecurityEventCheck.check(token, keys: keys, configuration: self.configuration, now: now) {
        case .failure(let refusal):
            self.count(event: "-", outcome: refusal.code.rawValue)
            return eventLoop.makeSucceededFuture(.refused(refusal))
        case .success(let checked):
            event = checked
        }
        let digest = TokenDigest(of: Substring("signal-jti:" + self.configuration.issuer + " " + event.jti))
        // Kept as long as the SET could still be accepted anywhere, and a little longer.
        let keepSeconds = event.issuedAt + Double(self.configuration.maxAgeSeconds) + 300 - now
        guard self.seen.firstUse(digest, until: now + keepSeconds, now: now) else {
            return eventLoop.makeSucceededFuture(self.replayed(event))
        }
        guard let shared = self.sharedSeen?.firstUse(digest, keepSeconds: keepSeconds, on: eventLoop) else {
            return eventLoop.makeSucceededFuture(self.act(on: event))
        }
        return shared.map { first in first ? self.act(on: event) : self.replayed(event) }
    }

    private func act(on event: SecurityEvent) -> Answer {
        switch event.kind {
        case .sessionRevoked:
            // As back-channel logout: the provider session when named, else every session of
            // the subject, on every instance; their streams close (`SessionObserver`).
            self.sessions.end(
                providerSessionID: event.subject.providerSessionID, subject: event.subject.subject, reason: .signal)
        case .credentialChange, .tokenClaimsChange:
            if let subject = event.subject.subject { self.caches.forget(subject: subject) }
        }
        self.count(event: event.kind.label, outcome: "accepted")
        return .accepted(event)
    }

    private func replayed(_ event: SecurityEvent) -> Answer {
        self.count(event: event.kind.label, outcome: "replayed")
        return .refused(SecurityEventRefusal(.invalidRequest, "The SET's jti was received before"))
    }

    private func count(event: String, outcome: String) {
        self.metrics.increment(MetricKey(MetricName.signals, ["event": event, "outcome": outcome]))
    }
}
