import ServiceLifecycle

/// Runs the gateway until graceful shutdown (SIGTERM/SIGINT via the `ServiceGroup`), then
/// drains and stops.
public struct GatewayService: Service {
    let application: GatewayApplication

    public init(application: GatewayApplication) {
        self.application = application
    }

    public func run() async throws {
        try await self.application.start()
        // Suspends until graceful shutdown is triggered (or the task is cancelled).
        try? await gracefulShutdown()
        await self.application.drain()
        await self.application.shutdown()
    }
}

/// Named, never reflected: swift-service-lifecycle describes every service at `debug` level,
/// and this one holds the whole application (docs/operations.md, "What is never logged").
extension GatewayService: CustomStringConvertible, CustomReflectable {
    public var description: String { "GatewayService" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}
