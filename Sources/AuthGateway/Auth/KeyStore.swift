import Crypto
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Owns every issuer's keys: static ones from configuration and remote JWKS sets, and
/// publishes a new `KeySnapshot` to the event loops whenever they change (SPEC §3.1).
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
        var url: UpstreamURL
        var refreshSeconds: Int
        var minRefetchSeconds: Int
        var keys: [VerificationKey] = []
        var fingerprint: SHA256Digest?
        var fetchedAt: Double?
        var lastError: String?
    }

    private struct State {
        var configuration: TokensConfiguration
        var generation: UInt64
        var snapshot: KeySnapshot
        var remote: [String: RemoteState]
    }

    private let state: NIOLockedValueBox<State>
    /// One fetch in flight per issuer, whoever asks (start-up, the refresh service, an unknown
    /// `kid`); nothing remembered.
    private let fetches = LocalSingleFlight<String, Bool>(capacity: 1024)
    /// Unknown-`kid` refetches: one per issuer per `jwksMinRefetchSeconds`, the outcome
    /// remembered for that long (a remembered one means "no refetch allowed now").
    private let unknownKidRefetches = LocalSingleFlight<String, Bool>(capacity: 1024)
    private let metrics: ProcessMetrics
    private let clock: @Sendable () -> Double
    private let publish: @Sendable (KeySnapshot) -> Void

    /// `publish` receives every new snapshot (the application hands it to each event loop).
    init(configuration: TokensConfiguration, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double, publish: @escaping @Sendable (KeySnapshot) -> Void) {
        var remote: [String: RemoteState] = [:]
        for issuer in configuration.issuers {
            if let jwks = issuer.jwks {
                remote[issuer.issuer] = RemoteState(url: jwks.url, refreshSeconds: jwks.refreshSeconds, minRefetchSeconds: jwks.minRefetchSeconds)
            }
        }
        let snapshot = KeySnapshot(generation: 1, issuers: KeySnapshot.issuers(from: configuration))
        self.state = NIOLockedValueBox(State(configuration: configuration, generation: 1, snapshot: snapshot, remote: remote))
        self.metrics = metrics
        self.clock = clock
        self.publish = publish
    }

    public var snapshot: KeySnapshot { self.state.withLockedValue { $0.snapshot } }

    /// Ready when every issuer with a `jwksURL` has fetched its keys once.
    public var isReady: Bool { self.state.withLockedValue { $0.remote.values.allSatisfy { $0.fetchedAt != nil } } }

    /// Issuers with a remote key set, with the URL to fetch.
    var remoteIssuers: [(issuer: String, url: UpstreamURL, refreshSeconds: Int)] {
        self.state.withLockedValue { state in
            state.remote.map { (issuer: $0.key, url: $0.value.url, refreshSeconds: $0.value.refreshSeconds) }.sorted { $0.issuer < $1.issuer }
        }
    }

    /// Key source, count and age per issuer, for `/healthz` and the key-age metric.
    struct IssuerStatus: Sendable {
        var issuer: String
        var source: String
        var keyCount: Int
        var ageSeconds: Double?
        var lastError: String?
    }

    var status: [IssuerStatus] {
        let now = self.clock()
        return self.state.withLockedValue { state in
            state.snapshot.issuers.map { issuer in
                let remote = state.remote[issuer.issuer]
                return IssuerStatus(
                    issuer: issuer.issuer,
                    source: remote.map { "jwksURL \($0.url)" } ?? "static",
                    keyCount: issuer.keyCount,
                    ageSeconds: remote?.fetchedAt.map { now - $0 },
                    lastError: remote?.lastError
                )
            }
        }
    }

    /// Adopts a reloaded configuration: remote keys already fetched for an unchanged URL are
    /// kept, so a reload does not make the gateway unready.
    func update(configuration: TokensConfiguration) {
        let snapshot: KeySnapshot = self.state.withLockedValue { state in
            var remote: [String: RemoteState] = [:]
            for issuer in configuration.issuers {
                guard let jwks = issuer.jwks else { continue }
                if var existing = state.remote[issuer.issuer], existing.url == jwks.url {
                    existing.refreshSeconds = jwks.refreshSeconds
                    existing.minRefetchSeconds = jwks.minRefetchSeconds
                    remote[issuer.issuer] = existing
                } else {
                    remote[issuer.issuer] = RemoteState(url: jwks.url, refreshSeconds: jwks.refreshSeconds, minRefetchSeconds: jwks.minRefetchSeconds)
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

    /// Fetches `issuer`'s JWKS now, or joins the fetch already running; the future tells
    /// whether it succeeded. Never fails: a failed fetch is recorded and the last good keys stay.
    func fetch(issuer: String, using client: UpstreamClient) -> EventLoopFuture<Bool> {
        let eventLoop = client.eventLoop
        let flight: LocalSingleFlight<String, Bool>.Flight
        switch self.fetches.lookup(issuer, now: self.clock(), policy: .init(freshSeconds: 0), eventLoop: eventLoop) {
        case .fresh(let fetched), .stale(let fetched, _):
            return eventLoop.makeSucceededFuture(fetched)  // nothing is remembered: not reached
        case .joined(let inFlight):
            return inFlight
        case .lead(let lead):
            flight = lead
        }
        guard let url = self.state.withLockedValue({ $0.remote[issuer]?.url }) else {
            self.fetches.settle(flight, now: self.clock(), outcome: false, remember: false)
            return flight.promise.futureResult
        }
        let path = url.pathAndQuery.isEmpty ? "/" : url.pathAndQuery
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let request = UpstreamRequest(method: .GET, path: path, headers: headers, body: nil)
        let call = eventLoop.inEventLoop ? client.execute(request) : client.executeFromAnyThread(request)
        call.whenComplete { result in
            let fetched = self.finishFetch(issuer: issuer, result: result)
            self.fetches.settle(flight, now: self.clock(), outcome: fetched, remember: false)
        }
        return flight.promise.futureResult
    }

    /// For a token whose `kid` is unknown: refetch the issuer's keys if the cooldown allows (or
    /// join a refetch in flight) and return the snapshot after it, or nil when the fetch failed
    /// (the caller answers 503: it could not check). A nil future means no refetch is allowed
    /// now and the token must be refused.
    func refetchForUnknownKey(issuerIndex: Int, using client: (UpstreamURL) -> UpstreamClient?) -> EventLoopFuture<KeySnapshot?>? {
        let now = self.clock()
        let target: (issuer: String, url: UpstreamURL, cooldown: Int)? = self.state.withLockedValue { state in
            guard issuerIndex < state.snapshot.issuers.count else { return nil }
            let name = state.snapshot.issuers[issuerIndex].issuer
            return state.remote[name].map { (name, $0.url, $0.minRefetchSeconds) }
        }
        guard let target, let client = client(target.url) else { return nil }
        let policy = LocalSingleFlight<String, Bool>.Policy(freshSeconds: Double(target.cooldown))
        let fetched: EventLoopFuture<Bool>
        switch self.unknownKidRefetches.lookup(target.issuer, now: now, policy: policy, eventLoop: client.eventLoop) {
        case .fresh, .stale:
            return nil
        case .joined(let inFlight):
            fetched = inFlight
        case .lead(let flight):
            self.fetch(issuer: target.issuer, using: client).whenComplete { result in
                // Remembered either way: the cooldown holds after a failed refetch too.
                self.unknownKidRefetches.settle(flight, now: self.clock(), outcome: (try? result.get()) ?? false, remember: true)
            }
            fetched = flight.promise.futureResult
        }
        return fetched.map { succeeded in succeeded ? self.snapshot : nil }
    }

    @discardableResult
    private func finishFetch(issuer: String, result: Result<UpstreamResponse, Error>) -> Bool {
        let now = self.clock()
        var outcome = "error"
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
            guard var remote = state.remote[issuer] else { return nil }
            defer { state.remote[issuer] = remote }
            guard let parsed, let fingerprint else {
                remote.lastError = failure
                return nil
            }
            remote.fetchedAt = now
            remote.lastError = nil
            guard fingerprint != remote.fingerprint else {
                outcome = "unchanged"
                return nil
            }
            outcome = "updated"
            remote.fingerprint = fingerprint
            remote.keys = parsed.keys
            state.remote[issuer] = remote
            state.generation += 1
            state.snapshot = Self.makeSnapshot(state)
            return state.snapshot
        }
        self.metrics.increment(MetricKey(MetricName.jwksFetches, ["issuer": issuer, "result": outcome]))
        if let published { self.publish(published) }
        return parsed != nil
    }

    private static func fingerprint(_ result: Result<UpstreamResponse, Error>) -> SHA256Digest? {
        guard case .success(let response) = result else { return nil }
        return response.body.withUnsafeReadableBytes { SHA256.hash(data: $0) }
    }

    private static func makeSnapshot(_ state: State) -> KeySnapshot {
        var remoteKeys: [String: (keys: [VerificationKey], fetchedAt: Double)] = [:]
        for (issuer, remote) in state.remote {
            if let fetchedAt = remote.fetchedAt { remoteKeys[issuer] = (remote.keys, fetchedAt) }
        }
        return KeySnapshot(generation: state.generation, issuers: KeySnapshot.issuers(from: state.configuration, remoteKeys: remoteKeys))
    }
}
