import NIOCore
import NIOHTTP1

/// Whose profile: the verified `sub` within its issuer.
struct ProfileKey: Hashable, Sendable {
    let issuer: String
    let subject: String
}

/// Users' profiles from the auth service (`GET /v1/user`, OIDC userinfo), cached process-wide
/// (SPEC §4.4).
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

    private struct Entry: Sendable {
        var profile: JSONObject?
        var fetchedAt: Double = 0
        var inFlight: EventLoopFuture<FetchResult>?
    }

    private let configuration: ProfileConfiguration
    private let entries: Sharded<LRUCache<ProfileKey, Entry>>
    private let clock: @Sendable () -> Double
    private let metrics: ProcessMetrics

    init(configuration: ProfileConfiguration, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double) {
        self.configuration = configuration
        self.metrics = metrics
        self.clock = clock
        self.entries = Sharded(capacity: configuration.maxEntries) { LRUCache(capacity: $0) }
    }

    /// The profile for `key`, or a fetch (made with `client` on the caller's loop) to wait for.
    /// `accessToken` authorizes the fetch; `result` receives the lookup's metric label.
    func lookup(_ key: ProfileKey, accessToken: String, client: UpstreamClient, result: (String) -> Void) -> Lookup {
        let now = self.clock()
        let ttl = Double(self.configuration.ttlSeconds)
        let staleLimit = ttl + Double(self.configuration.staleSeconds)
        enum Step {
            case fresh(JSONObject)
            case stale(JSONObject, refresh: EventLoopPromise<FetchResult>?)
            case join(EventLoopFuture<FetchResult>)
            case fetch(EventLoopPromise<FetchResult>)
        }
        let eventLoop = client.eventLoop
        let step: Step = self.entries.withShard(for: key) { table in
            var entry = table.get(key) ?? Entry()
            if let profile = entry.profile {
                let age = now - entry.fetchedAt
                if age < ttl { return .fresh(profile) }
                if age < staleLimit {
                    guard entry.inFlight == nil else { return .stale(profile, refresh: nil) }
                    let promise = eventLoop.makePromise(of: FetchResult.self)
                    entry.inFlight = promise.futureResult
                    table.set(key, entry)
                    return .stale(profile, refresh: promise)
                }
            }
            if let inFlight = entry.inFlight { return .join(inFlight) }
            let promise = eventLoop.makePromise(of: FetchResult.self)
            entry.inFlight = promise.futureResult
            table.set(key, entry)
            return .fetch(promise)
        }
        switch step {
        case .fresh(let profile):
            result("hit")
            return .hit(profile)
        case .stale(let profile, let refresh):
            result("stale")
            if let refresh { self.fetch(key, accessToken: accessToken, client: client, promise: refresh) }
            return .hit(profile)
        case .join(let inFlight):
            result("coalesced")
            return .pending(inFlight.hop(to: eventLoop))
        case .fetch(let promise):
            result("miss")
            self.fetch(key, accessToken: accessToken, client: client, promise: promise)
            return .pending(promise.futureResult)
        }
    }

    private func fetch(_ key: ProfileKey, accessToken: String, client: UpstreamClient, promise: EventLoopPromise<FetchResult>) {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "Authorization", value: self.configuration.authorization == .bearer ? "Bearer \(accessToken)" : accessToken)
        let request = UpstreamRequest(method: .GET, path: self.configuration.path, headers: headers, body: nil)
        let started = self.clock()
        client.execute(request).whenComplete { response in
            let finished = self.clock()
            self.metrics.observe(MetricKey(MetricName.authServiceDuration, ["operation": "profile"]), seconds: finished - started)
            let outcome = Self.classify(response)
            let delivered: FetchResult = self.entries.withShard(for: key) { table in
                var entry = table.peek(key) ?? Entry()
                entry.inFlight = nil
                switch outcome {
                case .profile(let profile):
                    entry.profile = profile
                    entry.fetchedAt = finished
                case .unauthorized:
                    table.remove(key)
                    return outcome
                case .unavailable:
                    // Keep serving what we have while it is within its stale window.
                    if let profile = entry.profile, finished - entry.fetchedAt < Double(self.configuration.ttlSeconds + self.configuration.staleSeconds) {
                        table.set(key, entry)
                        return .profile(profile)
                    }
                }
                table.set(key, entry)
                return outcome
            }
            promise.succeed(delivered)
        }
    }

    private static func classify(_ response: Result<UpstreamResponse, Error>) -> FetchResult {
        guard case .success(let response) = response else { return .unavailable }
        switch response.status.code {
        case 200..<300:
            guard case .object(let profile)? = try? JSONValue(parsing: String(buffer: response.body)) else { return .unavailable }
            return .profile(profile)
        case 401, 403:
            // The endpoint refuses this token (403: e.g. a missing userinfo scope).
            return .unauthorized
        default:
            return .unavailable
        }
    }
}
