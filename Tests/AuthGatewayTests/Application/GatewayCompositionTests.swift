import Logging
import NIOEmbedded
import Testing

@testable import AuthGateway

/// `GatewayComposition`: what a configuration builds, and what a reload keeps of it.
@Suite("GatewayComposition")
struct GatewayCompositionTests {
    private static func shared(_ configuration: GatewayConfiguration) throws -> GatewayShared {
        try GatewayComposition.makeShared(
            configuration, clock: { 1_000 }, logger: Logger(label: "test"), connector: SocketConnector(),
            publisher: KeyPublisher(), group: nil
        )
    }

    private static func withProfile(ttl: Int) -> (inout JSONObject) -> Void {
        {
            $0["authService"] = [
                "url": "http://127.0.0.1:9", "profile": ["path": "/v1/user", "ttlSeconds": .number(JSONNumber(ttl))],
            ]
        }
    }

    @Test func theReloadablePartsKeepTheirStateOnlyWhileTheirSectionIsUnchanged() throws {
        let configuration = try ApplicationTesting.configuration(Self.withProfile(ttl: 60))
        let shared = try Self.shared(configuration)
        let first = GatewayComposition.reloadableParts(for: configuration, keeping: nil, shared: shared)
        let same = GatewayComposition.reloadableParts(for: configuration, keeping: first, shared: shared)
        let changed = GatewayComposition.reloadableParts(
            for: try ApplicationTesting.configuration(Self.withProfile(ttl: 120)), keeping: first, shared: shared)
        let without = GatewayComposition.reloadableParts(
            for: try ApplicationTesting.configuration(), keeping: first, shared: shared)

        #expect(first.profiles != nil)
        #expect(same.profiles === first.profiles)
        #expect(changed.profiles != nil && changed.profiles !== first.profiles)
        #expect(without.profiles == nil)
        // Neither introspection nor rate limits are configured: nothing is built for them.
        #expect(first.introspector == nil)
        #expect(first.rateLimiter == nil)
    }

    /// Without an event loop group (the one-worker harness) the shared state stays local even
    /// when configured: there is nothing to run its PostgreSQL client on.
    @Test func withoutAGroupTheRefreshStoreIsLocal() throws {
        let shared = try Self.shared(try ApplicationTesting.configuration())
        #expect(shared.sharedState == nil)
        #expect(shared.authentication.refreshStore is LocalRefreshStore)
    }

    @Test func theSnapshotCarriesItsGenerationRoutesAndTheWorkerStartsAtOne() throws {
        let configuration = try ApplicationTesting.configuration {
            $0["routes"] = [
                ["name": "a", "pathPrefix": "/a", "backend": "api"],
                ["name": "b", "pathPrefix": "/b", "backend": "api"],
            ]
        }
        let shared = try Self.shared(configuration)
        let parts = GatewayComposition.reloadableParts(for: configuration, keeping: nil, shared: shared)
        let snapshot = GatewayComposition.makeSnapshot(
            configuration, generation: 7, shared: shared, parts: parts, backendTLS: [nil])
        #expect(snapshot.generation == 7)
        #expect(snapshot.configuration.routes.map(\.name) == ["a", "b"])
        #expect(snapshot.backends.map(\.name) == ["api"])
        #expect(snapshot.routes.routes.map(\.backendIndex) == [0, 0])

        let loop = EmbeddedEventLoop()
        let worker = try GatewayApplication.makeWorker(
            configuration: configuration, eventLoop: loop, clock: { 1_000 }, connector: SocketConnector())
        #expect(worker.snapshot.generation == 1)
        #expect(worker.pool(for: worker.snapshot.backends[0])?.name == "backend api")
    }
}
