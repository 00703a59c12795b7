import Logging
import NIOCore
import Testing

@testable import AuthGateway

/// `ResolvedBackend` and `ResolvedRoute`: what a (re)load resolves once, so that a request
/// goes from its route to its backend's timeouts, TLS, availability and health keys by
/// position, never by name.
@Suite("ResolvedBackend")
struct ResolvedBackendTests {
    private static func configuration(_ configure: (inout JSONObject) -> Void) throws -> GatewayConfiguration {
        try ApplicationTesting.configuration(configure)
    }

    /// Two backends (`api` with two URLs and its own timeouts, `files`) and three routes.
    private static func twoBackends(_ document: inout JSONObject) {
        document["backends"] = [
            "api": [
                "urls": ["http://127.0.0.1:9", "http://127.0.0.1:10"], "connectTimeoutMilliseconds": 250,
                "responseTimeoutMilliseconds": 1500,
            ],
            "files": ["urls": ["http://127.0.0.1:11"]],
        ]
        document["routes"] = [
            ["name": "files", "pathPrefix": "/files/", "backend": "files"],
            ["name": "api", "pathPrefix": "/api/", "backend": "api"],
            ["name": "rest", "pathPrefix": "/", "backend": "files"],
        ]
    }

    private static func snapshot(_ configuration: GatewayConfiguration) throws -> RuntimeSnapshot {
        let shared = try GatewayComposition.makeShared(
            configuration, clock: { 1_000 }, logger: Logger(label: "test"), connector: SocketConnector(),
            publisher: KeyPublisher(), group: nil)
        return GatewayComposition.makeSnapshot(
            configuration, generation: 1, shared: shared,
            parts: GatewayComposition.reloadableParts(for: configuration, keeping: nil, shared: shared),
            backendTLS: try UpstreamTLS.backends(configuration))
    }

    @Test func eachBackendIsResolvedInOrderWithWhatIsAtItsPosition() throws {
        let configuration = try Self.configuration(Self.twoBackends)
        let availabilities = configuration.backends.map { TargetAvailability(name: $0.name, urls: $0.urls) }
        let backends = ResolvedBackend.resolve(
            configuration.backends, tls: [nil, nil], availabilities: availabilities)

        #expect(backends.map(\.name) == configuration.backends.map(\.name))
        for (index, backend) in backends.enumerated() {
            #expect(backend.index == index)
            #expect(backend.configuration == configuration.backends[index])
            #expect(backend.availability === availabilities[index])
            #expect(backend.tls == nil)
            #expect(
                backend.healthKeys
                    == backend.configuration.urls.map { DependencyKey(upstream: .backend(backend.name), url: $0) })
        }
        let api = try #require(backends.first { $0.name == "api" })
        #expect(api.connectTimeout == .milliseconds(250))
        #expect(api.responseTimeout == .milliseconds(1500))
        #expect(api.healthKeys.map(\.url.description) == ["http://127.0.0.1:9", "http://127.0.0.1:10"])
        // The defaults when the configuration says nothing.
        let files = try #require(backends.first { $0.name == "files" })
        #expect(files.responseTimeout == .milliseconds(Int64(files.configuration.responseTimeoutMilliseconds)))
        #expect(files.connectTimeout == .milliseconds(Int64(files.configuration.connectTimeoutMilliseconds)))
    }

    @Test func everyRouteOfTheSnapshotKnowsItsBackend() throws {
        let configuration = try Self.configuration(Self.twoBackends)
        let snapshot = try Self.snapshot(configuration)

        #expect(snapshot.backends.map(\.name) == configuration.backends.map(\.name))
        #expect(snapshot.routes.routes.map(\.configuration.name) == ["files", "api", "rest"])
        for route in snapshot.routes.routes {
            let backend = snapshot.backend(of: route)
            #expect(backend.name == route.configuration.backend)
            #expect(backend === snapshot.backends[route.backendIndex])
        }
        let matched = try #require(snapshot.routes.match(host: nil, path: "/api/items", method: "GET"))
        #expect(snapshot.backend(of: matched).responseTimeout == .milliseconds(1500))
    }

    @Test func theTimerGranularityIsTheShortestTimeoutIncludingEachBackendsResponseTimeout() throws {
        let configuration = try Self.configuration { document in
            Self.twoBackends(&document)
            document["timeouts"] = ["idleSeconds": 60, "requestHeaderSeconds": 10]
        }
        #expect(try Self.snapshot(configuration).timerGranularity == .milliseconds(1500))
    }
}
