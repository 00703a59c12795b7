import NIOCore
import NIOHTTP1

/// Whose profile: the verified `sub` within its issuer.
struct ProfileKey: Hashable, Sendable {
    let issuer: String
    let subject: String
}

/// Users' profiles from the auth service (`GET /v1/user`, OIDC userinfo), cached process-wide
/// (docs/authentication.md).
///
/// - LRU bounded by `maxEntries`, fresh for `ttlSeconds`.
/// - After that an entry is still served for `staleSeconds` (counted from when it went stale)
///   while one background fetch refreshes it — also while the auth service is down.
/// - Concurrent misses for one user share one fetch (single flight across event loops).
/// - A 401 (or 403) from the profile endpoint drops the entry and refuses the request.
final class ProfileCache: Sendable {
    enum FetchResult: Sendable, Equatable {
        case profile(JSONObject)
        case unauthorized
        case unavailable
    }

    enum Lookup {
        case hit(JSONObject)
        case pending(EventLoopFuture<FetchResult>)
    }

    private let configuration: ProfileConfiguration
    private let table: LocalSingleFlight<ProfileKey, FetchResult>
    private let clock: @Sendable () -> Double
    private let metrics: ProcessMetrics

    init(configuration: ProfileConfiguration, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double) {
        self.configuration = configuration
        self.metrics = metrics
        self.clock = clock
        self.table = LocalSingleFlight(capacity: configuration.maxEntries)
    }

    /// The configuration this cache was built for: a reload keeps the cache only while it is
    /// unchanged (docs/operations.md).
    /// Forgets `subject`'s profiles, of every issuer (a Shared Signals event: docs/streams.md):
    /// the next request fetches it again.
    @discardableResult
    func forget(subject: String) -> Int {
        self.table.forget { key, _ in key.subject == subject }
    }

    var profileConfiguration: ProfileConfiguration { self.configuration }

    /// The profile for `key`, or a fetch (made on the caller's `eventLoop`, to the profile
    /// endpoint `endpoints` resolves then) to wait for. `accessToken` authorizes the fetch;
    /// `result` receives the lookup's metric label.
    func lookup(
        _ key: ProfileKey, accessToken: String, eventLoop: EventLoop, endpoint: () -> UpstreamEndpoint?,
        result: (CacheLookup) -> Void
    ) -> Lookup {
        let policy = LocalSingleFlight<ProfileKey, FetchResult>.Policy(
            freshSeconds: Double(self.configuration.ttlSeconds), staleSeconds: Double(self.configuration.staleSeconds)
        )
        let answer = self.table.lookup(key, now: self.clock(), policy: policy, eventLoop: eventLoop) { flight in
            // A miss, or the background refresh of a stale profile.
            self.fetch(flight, accessToken: accessToken, endpoint: endpoint())
            return flight.promise.futureResult
        }
        switch answer {
        case .fresh(.profile(let profile)):
            result(.hit)
            return .hit(profile)
        case .stale(.profile(let profile)):
            result(.stale)
            return .hit(profile)
        case .fresh(let other), .stale(let other):
            // Only profiles are remembered; answered as it is should that ever change.
            result(.hit)
            return .pending(eventLoop.makeSucceededFuture(other))
        case .joined(let inFlight):
            result(.coalesced)
            return .pending(inFlight)
        case .led(let fetched):
            result(.miss)
            return .pending(fetched)
        }
    }

    /// Holds `profile` for `key` as a fetch would have (`check --request`'s `--profile`).
    func remember(_ profile: JSONObject, for key: ProfileKey, on eventLoop: EventLoop) {
        let policy = LocalSingleFlight<ProfileKey, FetchResult>.Policy(
            freshSeconds: Double(self.configuration.ttlSeconds), staleSeconds: Double(self.configuration.staleSeconds)
        )
        _ = self.table.lookup(key, now: self.clock(), policy: policy, eventLoop: eventLoop) { flight in
            self.table.settle(flight, now: self.clock(), outcome: .profile(profile), remember: true)
        }
    }

    /// One fetch for `flight`; without an endpoint (no discovery document yet) it settles at
    /// once as the auth service being unavailable.
    private func fetch(
        _ flight: LocalSingleFlight<ProfileKey, FetchResult>.Flight, accessToken: String, endpoint: UpstreamEndpoint?
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        headers.add(
            name: "Authorization",
            value: self.configuration.authorization == .bearer ? "Bearer \(accessToken)" : accessToken)
        let started = self.clock()
        let usableSeconds = Double(self.configuration.ttlSeconds + self.configuration.staleSeconds)
        let call: EventLoopFuture<UpstreamResponse>
        if let endpoint {
            call = endpoint.client.execute(
                UpstreamRequest(method: .GET, path: endpoint.path, headers: headers, body: nil))
        } else {
            call = flight.promise.futureResult.eventLoop.makeFailedFuture(UpstreamClientError.unreachable)
        }
        call.whenComplete { response in
            let finished = self.clock()
            self.metrics.observe(.authServiceDuration(.profile), seconds: finished - started)
            let outcome = Self.classify(response)
            self.table.settle(flight, now: finished) { previous in
                switch outcome {
                case .profile:
                    return (.value(outcome), outcome)
                case .unauthorized:
                    return (.nothing, outcome)
                case .unavailable:
                    // Keep serving what we have while it is within its stale window.
                    if let previous, finished - previous.storedAt < usableSeconds { return (.previous, previous.value) }
                    return (.previous, outcome)
                }
            }
        }
    }

    private static func classify(_ response: Result<UpstreamResponse, Error>) -> FetchResult {
        guard case .success(let response) = response else { return .unavailable }
        switch response.status.code {
        case 200..<300:
            guard case .object(let profile)? = try? JSONValue(parsing: String(buffer: response.body)) else {
                return .unavailable
            }
            return .profile(profile)
        case 401, 403:
            // The endpoint refuses this token (403: e.g. a missing userinfo scope).
            return .unauthorized
        default:
            return .unavailable
        }
    }
}
