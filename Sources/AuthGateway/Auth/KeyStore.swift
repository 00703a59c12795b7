import Crypto
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Owns every issuer's keys: static ones from configuration and remote JWKS sets, and
/// publishes a new `KeySnapshot` to the event loops whenever they change (docs/authentication.md).
///
/// - Remote sets are fetched before the gateway reports ready, then every
///   `jwksRefreshSeconds` (by `KeyRefreshService`).
/// - An unknown `kid` may trigger one refetch per `jwksMinRefetchSeconds`; concurrent
///   requests join the fetch in flight (single flight), so a flood of forged kids costs the key
///   endpoint at most one request per cooldown.
/// - A failed fetch keeps the last good set.
/// Requests never touch the lock here: they read the snapshot their loop was given.
public final class KeyStore: Sendable {
    struct RemoteState {
        var source: RemoteJWKSConfiguration.Source
        var refreshSeconds: Int
        var minRefetchSeconds: Int
        var keys: [VerificationKey] = []
        var fingerprint: SHA256Digest?
        var fetchedAt: Double?
        var lastError: String?
        /// For a discovery issuer: the last good document, when it came, the last failure.
        var discovery: DiscoveryState?

        init(_ jwks: RemoteJWKSConfiguration) {
            self.source = jwks.source
            self.refreshSeconds = jwks.refreshSeconds
            self.minRefetchSeconds = jwks.minRefetchSeconds
            if jwks.discovery != nil { self.discovery = DiscoveryState() }
        }

        /// The JWKS URL in force: the configured one, or the last good document's `jwks_uri`.
        var jwksURL: UpstreamURL? {
            switch self.source {
            case .url(let url): return url
            case .discovery: return self.discovery?.document?.jwksURI
            }
        }
    }

    struct DiscoveryState {
        var document: DiscoveryDocument?
        var fingerprint: SHA256Digest?
        var fetchedAt: Double?
        var lastError: String?
    }

    struct State {
        var configuration: TokensConfiguration
        var generation: UInt64
        var snapshot: KeySnapshot
        var remote: [String: RemoteState]
    }

    let state: NIOLockedValueBox<State>
    /// One fetch in flight per issuer, whoever asks (start-up, the refresh service, an unknown
    /// `kid`); nothing remembered. For a discovery issuer a fetch is the document, then the JWKS.
    private let fetches = LocalSingleFlight<String, Bool>(capacity: 1024)
    /// Unknown-`kid` refetches: one per issuer per `jwksMinRefetchSeconds`, the outcome
    /// remembered for that long (a remembered one means "no refetch allowed now").
    private let unknownKidRefetches = LocalSingleFlight<String, Bool>(capacity: 1024)
    let metrics: ProcessMetrics
    let clock: @Sendable () -> Double
    let logger: Logger
    private let publish: @Sendable (KeySnapshot) -> Void

    /// `publish` receives every new snapshot (the application hands it to each event loop).
    init(
        configuration: TokensConfiguration, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double,
        logger: Logger,
        publish: @escaping @Sendable (KeySnapshot) -> Void
    ) {
        var remote: [String: RemoteState] = [:]
        for issuer in configuration.issuers {
            if let jwks = issuer.jwks { remote[issuer.issuer] = RemoteState(jwks) }
        }
        let snapshot = KeySnapshot(generation: 1, issuers: KeySnapshot.issuers(from: configuration))
        self.state = NIOLockedValueBox(
            State(configuration: configuration, generation: 1, snapshot: snapshot, remote: remote))
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
        self.publish = publish
    }

    public var snapshot: KeySnapshot { self.state.withLockedValue { $0.snapshot } }

    /// Ready when every issuer with a `jwksURL` or discovery has fetched its keys once (a
    /// discovery issuer needs an accepted document first).
    public var isReady: Bool { self.state.withLockedValue { $0.remote.values.allSatisfy { $0.fetchedAt != nil } } }

    /// Why the keys are not ready (the first issuer still waiting, and its last error), or nil.
    var unreadyReason: String? {
        self.state.withLockedValue { state in
            guard let (issuer, remote) = state.remote.filter({ $0.value.fetchedAt == nil }).min(by: { $0.key < $1.key })
            else { return nil }
            let pending =
                remote.discovery.map { $0.document == nil ? "discovery pending" : "fetch pending" } ?? "fetch pending"
            let reason: String = remote.discovery?.lastError ?? remote.lastError ?? pending
            return "signing keys not loaded for \(issuer): \(reason)"
        }
    }

    /// Issuers with a remote key set (a `jwksURL` or discovery).
    var remoteIssuers: [(issuer: String, refreshSeconds: Int)] {
        self.state.withLockedValue { state in
            state.remote.map { (issuer: $0.key, refreshSeconds: $0.value.refreshSeconds) }.sorted {
                $0.issuer < $1.issuer
            }
        }
    }

    /// Key source, count and age per issuer, for `/healthz` and the key-age metric.
    struct IssuerStatus: Sendable {
        var issuer: String
        var source: String
        var keyCount: Int
        var ageSeconds: Double?
        var lastError: String?
        var discovery: DiscoveryStatus?
        /// Whether the issuer can verify tokens (static keys, or its remote keys fetched once).
        var ready: Bool
    }

    struct DiscoveryStatus: Sendable {
        var documentURL: UpstreamURL
        var document: DiscoveryDocument?
        var ageSeconds: Double?
        var lastError: String?
    }

    var status: [IssuerStatus] {
        let now = self.clock()
        return self.state.withLockedValue { state in
            state.snapshot.issuers.map { issuer in
                let remote = state.remote[issuer.issuer]
                let source: String
                var discovery: DiscoveryStatus?
                switch remote?.source {
                case nil: source = "static"
                case .url(let url)?: source = "jwksURL \(url)"
                case .discovery(let configuration)?:
                    source = "discovery \(configuration.documentURL)"
                    discovery = DiscoveryStatus(
                        documentURL: configuration.documentURL,
                        document: remote?.discovery?.document,
                        ageSeconds: remote?.discovery?.fetchedAt.map { now - $0 },
                        lastError: remote?.discovery?.lastError
                    )
                }
                return IssuerStatus(
                    issuer: issuer.issuer,
                    source: source,
                    keyCount: issuer.keyCount,
                    ageSeconds: remote?.fetchedAt.map { now - $0 },
                    lastError: remote?.lastError,
                    discovery: discovery,
                    ready: remote == nil || remote?.fetchedAt != nil
                )
            }
        }
    }

    /// Adopts a reloaded configuration: remote keys (and discovery documents) already fetched
    /// for an unchanged URL are kept, so a reload does not make the gateway unready.
    func update(configuration: TokensConfiguration) {
        let snapshot: KeySnapshot = self.state.withLockedValue { state in
            var remote: [String: RemoteState] = [:]
            for issuer in configuration.issuers {
                guard let jwks = issuer.jwks else { continue }
                if var existing = state.remote[issuer.issuer], existing.source.fetchURL == jwks.source.fetchURL {
                    existing.source = jwks.source
                    existing.refreshSeconds = jwks.refreshSeconds
                    existing.minRefetchSeconds = jwks.minRefetchSeconds
                    // The kept document may lack an endpoint the new configuration relies on.
                    if let requirements = jwks.discovery, let unmet = existing.discovery?.document?.unmet(requirements)
                    {
                        existing.discovery?.lastError = unmet.description
                    }
                    remote[issuer.issuer] = existing
                } else {
                    remote[issuer.issuer] = RemoteState(jwks)
                }
            }
            state.configuration = configuration
            state.remote = remote
            state.generation += 1
            state.snapshot = Self.makeSnapshot(state)
            return state.snapshot
        }
        self.publish(snapshot)
    }

    /// Fetches `issuer`'s keys now (for a discovery issuer: its document, then the JWKS it
    /// names), or joins the fetch already running; the future tells whether keys were fetched.
    /// Never fails: a failed fetch is recorded and the last good keys (and document) stay.
    /// Runs on `eventLoop`; `clients` gives that loop's client for an URL's origin.
    func fetch(
        issuer: String, on eventLoop: EventLoop, clients: @escaping (UpstreamURL) -> UpstreamClient?
    ) -> EventLoopFuture<Bool> {
        eventLoop.preconditionInEventLoop()
        return self.fetches.lookup(issuer, now: self.clock(), policy: .init(freshSeconds: 0), eventLoop: eventLoop) {
            flight in
            self.fetch(flight, issuer: issuer, on: eventLoop, clients: clients)
            return flight.promise.futureResult
        }.future(on: eventLoop)
    }

    /// The fetch `flight` leads; settled (nothing remembered) with whether keys were fetched.
    private func fetch(
        _ flight: LocalSingleFlight<String, Bool>.Flight, issuer: String, on eventLoop: EventLoop,
        clients: @escaping (UpstreamURL) -> UpstreamClient?
    ) {
        let settle: @Sendable (Bool) -> Void = { fetched in
            self.fetches.settle(flight, now: self.clock(), outcome: fetched, remember: false)
        }
        guard let source = self.state.withLockedValue({ $0.remote[issuer]?.source }) else {
            settle(false)
            return
        }
        switch source {
        case .url(let url):
            self.fetchKeySet(issuer: issuer, url: url, source: source, on: eventLoop, clients: clients).whenSuccess(
                settle)
        case .discovery(let configuration):
            self.fetchDiscoveryDocument(issuer: issuer, configuration: configuration, on: eventLoop, clients: clients)
                .assumeIsolated().whenSuccess { jwksURL in
                    guard let jwksURL else {
                        settle(false)
                        return
                    }
                    self.fetchKeySet(issuer: issuer, url: jwksURL, source: source, on: eventLoop, clients: clients)
                        .whenSuccess(settle)
                }
        }
    }

    /// One GET of a JWKS; true when it gave a usable key set.
    private func fetchKeySet(
        issuer: String, url: UpstreamURL, source: RemoteJWKSConfiguration.Source, on eventLoop: EventLoop,
        clients: (UpstreamURL) -> UpstreamClient?
    ) -> EventLoopFuture<Bool> {
        guard let client = clients(url) else {
            return eventLoop.makeSucceededFuture(
                self.finishFetch(issuer: issuer, source: source, result: .failure(UpstreamClientError.unreachable)))
        }
        let path = url.pathAndQuery.isEmpty ? "/" : url.pathAndQuery
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let request = UpstreamRequest(method: .GET, path: path, headers: headers, body: nil)
        return client.execute(request).map { response in
            self.finishFetch(issuer: issuer, source: source, result: .success(response))
        }.recover { error in
            self.finishFetch(issuer: issuer, source: source, result: .failure(error))
        }
    }

    /// For a token whose `kid` is unknown: refetch the issuer's keys if the cooldown allows (or
    /// join a refetch in flight) and return the snapshot after it, or nil when the fetch failed
    /// (the caller answers 503: it could not check). A nil future means no refetch is allowed
    /// now and the token must be refused.
    func refetchForUnknownKey(
        issuerIndex: Int, on eventLoop: EventLoop, clients: @escaping (UpstreamURL) -> UpstreamClient?
    ) -> EventLoopFuture<KeySnapshot?>? {
        let now = self.clock()
        let target: (issuer: String, cooldown: Int)? = self.state.withLockedValue { state in
            guard issuerIndex < state.snapshot.issuers.count else { return nil }
            let name = state.snapshot.issuers[issuerIndex].issuer
            return state.remote[name].map { (name, $0.minRefetchSeconds) }
        }
        guard let target else { return nil }
        let policy = LocalSingleFlight<String, Bool>.Policy(freshSeconds: Double(target.cooldown))
        let answer = self.unknownKidRefetches.lookup(target.issuer, now: now, policy: policy, eventLoop: eventLoop) {
            flight in
            // Remembered either way: the cooldown holds after a failed refetch too.
            self.unknownKidRefetches.settle(
                flight, when: self.fetch(issuer: target.issuer, on: eventLoop, clients: clients), failure: false,
                clock: self.clock
            ) { _ in true }
            return flight.promise.futureResult
        }
        switch answer {
        case .fresh, .stale:
            // Refetched within the cooldown: no refetch allowed now.
            return nil
        case .joined(let fetched), .led(let fetched):
            return fetched.map { succeeded in succeeded ? self.snapshot : nil }
        }
    }

    private func finishFetch(
        issuer: String, source: RemoteJWKSConfiguration.Source, result: Result<UpstreamResponse, Error>
    ) -> Bool {
        let now = self.clock()
        var outcome = FetchResult.error
        var parsed: JWKSet.Parsed?
        var failure: String?
        switch result {
        case .success(let response) where response.status == .ok:
            do {
                let set = try JWKSet.parse(text: String(buffer: response.body))
                if set.keys.isEmpty {
                    failure = "the JWKS holds no usable signature keys"
                } else {
                    parsed = set
                }
            } catch {
                failure = "invalid JWKS: \(error.message)"
            }
        case .success(let response):
            failure = "HTTP \(response.status.code)"
        case .failure(let error):
            failure = "fetch failed: \(error)"
        }
        let fingerprint = parsed.map { _ in Self.fingerprint(result) }
        let published: KeySnapshot? = self.state.withLockedValue { state in
            // A reload may have changed the issuer's source while this fetch ran.
            guard var remote = state.remote[issuer], remote.source.fetchURL == source.fetchURL else { return nil }
            defer { state.remote[issuer] = remote }
            guard let parsed, let fingerprint else {
                remote.lastError = failure
                return nil
            }
            remote.fetchedAt = now
            remote.lastError = nil
            guard fingerprint != remote.fingerprint else {
                outcome = .unchanged
                return nil
            }
            outcome = .updated
            remote.fingerprint = fingerprint
            remote.keys = parsed.keys
            state.remote[issuer] = remote
            state.generation += 1
            state.snapshot = Self.makeSnapshot(state)
            return state.snapshot
        }
        self.metrics.increment(.keySetFetch(issuer: issuer, outcome))
        if let published { self.publish(published) }
        return parsed != nil
    }

    static func fingerprint(_ result: Result<UpstreamResponse, Error>) -> SHA256Digest? {
        guard case .success(let response) = result else { return nil }
        return response.body.withUnsafeReadableBytes { SHA256.hash(data: $0) }
    }

    static func makeSnapshot(_ state: State) -> KeySnapshot {
        var remoteKeys: [String: (keys: [VerificationKey], fetchedAt: Double)] = [:]
        for (issuer, remote) in state.remote {
            if let fetchedAt = remote.fetchedAt { remoteKeys[issuer] = (remote.keys, fetchedAt) }
        }
        return KeySnapshot(
            generation: state.generation,
            issuers: KeySnapshot.issuers(from: state.configuration, remoteKeys: remoteKeys))
    }
}
