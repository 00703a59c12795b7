import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import AuthGateway

/// `UpstreamRegistry`: one loop's pool per backend (by the backend's index) and its clients
/// for the gateway's own calls; what a reload keeps, replaces and shuts down; where connect
/// results are recorded.
@Suite("UpstreamRegistry")
struct UpstreamRegistryTests {
    /// Refuses every connection, remembering where each attempt went.
    struct RefusingConnector: UpstreamConnector {
        struct Refused: Error, CustomStringConvertible {
            var description: String { "refused" }
        }

        let attempts = NIOLockedValueBox<[UpstreamURL]>([])

        func connect(
            to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: UpstreamTLS?, http2: Bool
        ) -> EventLoopFuture<Channel> {
            self.attempts.withLockedValue { $0.append(target) }
            return eventLoop.makeFailedFuture(Refused())
        }
    }

    final class Requester: UpstreamLeaseRequester {
        var failures: [GatewayError] = []
        func leaseSucceeded(_ lease: UpstreamLease, reused: Bool) {}
        func leaseFailed(_ error: GatewayError) { self.failures.append(error) }
    }

    /// A registry on an embedded loop, and what it is built from.
    struct Fixture {
        let loop = EmbeddedEventLoop()
        let connector = RefusingConnector()
        let shared: GatewayShared
        let registry: UpstreamRegistry
        private var parts: GatewayComposition.ReloadableParts?
        private var generation: UInt64 = 0

        /// The process-wide parts of the base test configuration (no client TLS).
        init() throws {
            self.shared = try GatewayComposition.makeShared(
                try ApplicationTesting.configuration(), clock: { 1_000 }, logger: Logger(label: "test"),
                connector: self.connector,
                publisher: KeyPublisher(), group: nil)
            self.registry = UpstreamRegistry(eventLoop: self.loop, shared: self.shared)
        }

        /// Builds the snapshot of `configuration` (as a start or a reload does) and applies it.
        @discardableResult
        mutating func apply(_ configuration: GatewayConfiguration) throws -> RuntimeSnapshot {
            self.generation += 1
            let parts = GatewayComposition.reloadableParts(for: configuration, keeping: self.parts, shared: self.shared)
            self.parts = parts
            let snapshot = GatewayComposition.makeSnapshot(
                configuration, generation: self.generation, shared: self.shared, parts: parts,
                backendTLS: try UpstreamTLS.backends(configuration))
            self.registry.apply(snapshot)
            return snapshot
        }

        /// True when `pool` refuses a lease at once, without trying to connect (shut down).
        func isShutDown(_ pool: UpstreamPool) -> Bool {
            let before = self.connector.attempts.withLockedValue { $0.count }
            let requester = Requester()
            _ = pool.lease(for: requester)
            pool.cancelLease(for: requester)
            return self.connector.attempts.withLockedValue { $0.count } == before && !requester.failures.isEmpty
        }
    }

    private static func configuration(
        backends: JSONObject, _ configure: (inout JSONObject) -> Void = { _ in }
    ) throws -> GatewayConfiguration {
        try ApplicationTesting.configuration { document in
            document["backends"] = .object(backends)
            document["routes"] = .array(
                backends.entries.map {
                    .object(["name": .string($0.key), "pathPrefix": "/", "backend": .string($0.key)])
                }
            )
            configure(&document)
        }
    }

    private static func backend(_ snapshot: RuntimeSnapshot, _ name: String) throws -> ResolvedBackend {
        try #require(snapshot.backends.first { $0.name == name })
    }

    @Test func eachBackendHasAPoolMadeFromItsResolvedSettings() throws {
        var fixture = try Fixture()
        let snapshot = try fixture.apply(
            try Self.configuration(backends: [
                "api": ["urls": ["http://127.0.0.1:9", "http://127.0.0.1:10"], "connectTimeoutMilliseconds": 250],
                "grpc": ["urls": ["http://127.0.0.1:11"], "protocol": "h2c"],
            ]))

        for backend in snapshot.backends {
            let pool = try #require(fixture.registry.pool(for: backend))
            #expect(pool.name == "backend \(backend.name)")
            #expect(pool.targets == backend.configuration.urls)
            #expect(pool.availability === backend.availability)
            #expect(pool.wireProtocol == backend.configuration.wireProtocol)
            #expect(pool.connectTimeout == backend.connectTimeout)
            #expect(pool.maxConnections == backend.configuration.maxConnectionsPerThread)
        }
        #expect(
            try #require(fixture.registry.pool(for: try Self.backend(snapshot, "api"))).connectTimeout
                == .milliseconds(250))
        #expect(try #require(fixture.registry.pool(for: try Self.backend(snapshot, "grpc"))).wireProtocol == .h2c)
    }

    /// SIGHUP: an unchanged backend keeps its pool (and so its keep-alive connections) even
    /// when it moves to another index; a changed one gets a new pool; a changed or removed
    /// one's old pool is shut down.
    @Test func aReloadKeepsUnchangedBackendsPoolsAndShutsDownTheRest() throws {
        let api: JSONValue = ["urls": ["http://127.0.0.1:9"]]
        var fixture = try Fixture()
        let first = try fixture.apply(
            try Self.configuration(backends: [
                "api": api, "other": ["urls": ["http://127.0.0.1:10"]], "gone": ["urls": ["http://127.0.0.1:12"]],
            ]))
        let apiPool = try #require(fixture.registry.pool(for: try Self.backend(first, "api")))
        let otherPool = try #require(fixture.registry.pool(for: try Self.backend(first, "other")))
        let gonePool = try #require(fixture.registry.pool(for: try Self.backend(first, "gone")))

        let second = try fixture.apply(
            try Self.configuration(backends: [
                "aaa": ["urls": ["http://127.0.0.1:13"]], "api": api, "other": ["urls": ["http://127.0.0.1:11"]],
            ]))
        let secondAPI = try Self.backend(second, "api")
        #expect(secondAPI !== (try Self.backend(first, "api")))
        #expect(secondAPI.index != (try Self.backend(first, "api")).index)
        #expect(try #require(fixture.registry.pool(for: secondAPI)) === apiPool)
        #expect(!fixture.isShutDown(apiPool))
        let newOther = try #require(fixture.registry.pool(for: try Self.backend(second, "other")))
        #expect(newOther !== otherPool)
        #expect(newOther.targets.map(\.description) == ["http://127.0.0.1:11"])
        #expect(fixture.isShutDown(otherPool))
        #expect(fixture.isShutDown(gonePool))
        #expect(!fixture.isShutDown(newOther))
        // A request decided under the first configuration (its decision waited across the
        // reload) gets the pool of its backend's name now, or none when the name is gone.
        #expect(fixture.registry.pool(for: try Self.backend(first, "api")) === apiPool)
        #expect(fixture.registry.pool(for: try Self.backend(first, "other")) === newOther)
        #expect(fixture.registry.pool(for: try Self.backend(first, "gone")) == nil)
    }

    /// The availability is process-wide: a reload that keeps the backend keeps it, and the
    /// pool with it; a backend whose checks change gets a new availability and a pool using it.
    @Test func aBackendWhoseChecksChangeGetsANewAvailabilityAndPool() throws {
        var fixture = try Fixture()
        let first = try fixture.apply(try Self.configuration(backends: ["api": ["urls": ["http://127.0.0.1:9"]]]))
        let pool = try #require(fixture.registry.pool(for: try Self.backend(first, "api")))
        let same = try fixture.apply(try Self.configuration(backends: ["api": ["urls": ["http://127.0.0.1:9"]]]))
        #expect(try Self.backend(same, "api").availability === (try Self.backend(first, "api")).availability)
        #expect(try #require(fixture.registry.pool(for: try Self.backend(same, "api"))) === pool)

        let checked = try fixture.apply(
            try Self.configuration(backends: [
                "api": ["urls": ["http://127.0.0.1:9"], "outlierDetection": ["consecutiveFailures": 3]]
            ]))
        let backend = try Self.backend(checked, "api")
        #expect(backend.availability !== (try Self.backend(first, "api")).availability)
        #expect(try #require(fixture.registry.pool(for: backend)) !== pool)
        #expect(try #require(fixture.registry.pool(for: backend)).availability === backend.availability)
    }

    @Test func connectResultsAreRecordedUnderTheBackendsHealthKeys() throws {
        var fixture = try Fixture()
        let snapshot = try fixture.apply(
            try Self.configuration(backends: ["api": ["urls": ["http://127.0.0.1:9"]]]))
        let backend = try Self.backend(snapshot, "api")
        #expect(fixture.shared.health.status(of: backend.healthKeys[0]) == nil)

        let requester = Requester()
        _ = try #require(fixture.registry.pool(for: backend)).lease(for: requester)

        #expect(fixture.connector.attempts.withLockedValue { $0 }.map(\.description) == ["http://127.0.0.1:9"])
        let record = try #require(
            fixture.shared.health.status(
                of: DependencyKey(upstream: .backend("api"), url: backend.configuration.urls[0])))
        #expect(record.isFailing)
        #expect(record.lastError == "refused")
    }

    @Test func clientsAreFoundByOriginAndKeyedByTheirUpstream() throws {
        let configuration = try Self.configuration(backends: ["api": ["urls": ["http://127.0.0.1:9"]]]) {
            $0["authService"] = ["url": "http://127.0.0.1:7", "timeoutMilliseconds": 2000]
        }
        var fixture = try Fixture()
        try fixture.apply(configuration)
        let authURL = try #require(configuration.authService?.url)
        let auth = try #require(fixture.registry.authServiceClient)
        #expect(auth.pool.name == "auth service")
        #expect(auth.timeout == .milliseconds(2000))
        // Any URL on the auth service's origin goes through its client.
        let sameOrigin = UpstreamURL(scheme: .http, host: "127.0.0.1", port: 7, pathAndQuery: "/userinfo")
        #expect(fixture.registry.client(for: sameOrigin) === auth)
        #expect(fixture.registry.dependencyKey(for: sameOrigin) == DependencyKey(upstream: .authService, url: authURL))

        // An endpoint on another origin (named by a discovery document) gets a client of its
        // own, made on first use, for the origin.
        let elsewhere = UpstreamURL(scheme: .http, host: "127.0.0.1", port: 8, pathAndQuery: "/token")
        #expect(fixture.registry.dependencyKey(for: elsewhere) == nil)
        let discovered = try #require(fixture.registry.client(for: elsewhere))
        #expect(discovered.pool.name == "discovered")
        #expect(discovered.timeout == .milliseconds(2000))
        #expect(fixture.registry.client(for: elsewhere) === discovered)
        let origin = UpstreamURL(scheme: .http, host: "127.0.0.1", port: 8, pathAndQuery: "")
        #expect(fixture.registry.dependencyKey(for: elsewhere) == DependencyKey(upstream: .discovered, url: origin))

        // Reloaded unchanged: the auth service keeps its client; the discovered one, which no
        // discovery document names, is dropped.
        try fixture.apply(configuration)
        #expect(fixture.registry.authServiceClient === auth)
        #expect(fixture.registry.dependencyKey(for: elsewhere) == nil)
        #expect(fixture.isShutDown(discovered.pool))
        #expect(!fixture.isShutDown(auth.pool))

        // A new timeout is a new client; the old one is shut down.
        let slower = try Self.configuration(backends: ["api": ["urls": ["http://127.0.0.1:9"]]]) {
            $0["authService"] = ["url": "http://127.0.0.1:7", "timeoutMilliseconds": 4000]
        }
        try fixture.apply(slower)
        let replaced = try #require(fixture.registry.authServiceClient)
        #expect(replaced !== auth)
        #expect(replaced.timeout == .milliseconds(4000))
        #expect(fixture.isShutDown(auth.pool))
    }

    @Test func withoutAnAuthServiceThereIsNoClientAndOnlyHTTPWithoutClientTLS() throws {
        let configuration = try Self.configuration(backends: ["api": ["urls": ["http://127.0.0.1:9"]]])
        var fixture = try Fixture()
        try fixture.apply(configuration)
        #expect(fixture.registry.authServiceClient == nil)
        #expect(fixture.shared.clientTLS == nil)
        let https = UpstreamURL(scheme: .https, host: "127.0.0.1", port: 8443, pathAndQuery: "/jwks")
        #expect(fixture.registry.client(for: https) == nil)
    }
}
