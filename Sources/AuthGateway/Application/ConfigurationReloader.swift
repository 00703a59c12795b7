import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Adopts a new configuration (SIGHUP, docs/operations.md): what can fail is built before anything
/// changes, so an invalid file or unusable backend TLS keeps the old configuration; a valid one
/// becomes a new snapshot that every event loop swaps in (requests in flight finish with the
/// old one). Either way the outcome is logged and counted (`auth_gateway_config_reloads_total`).
/// Listener addresses, TLS files, the thread count, tracing and the shared state need a
/// restart; a change there is reported and otherwise ignored.
final class ConfigurationReloader: Sendable {
    private let shared: GatewayShared
    private let workers: [NIOLoopBound<Worker>]
    private let prober: HealthProber
    private let keys: KeyStartup
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    private struct State {
        var configuration: GatewayConfiguration
        var generation: UInt64
        var parts: GatewayComposition.ReloadableParts
    }

    /// `configuration` and `parts`: what generation 1 (the start) was built from.
    init(
        configuration: GatewayConfiguration, parts: GatewayComposition.ReloadableParts, shared: GatewayShared,
        workers: [NIOLoopBound<Worker>],
        prober: HealthProber, keys: KeyStartup, logger: Logger
    ) {
        self.shared = shared
        self.workers = workers
        self.prober = prober
        self.keys = keys
        self.logger = logger
        self.state = NIOLockedValueBox(State(configuration: configuration, generation: 1, parts: parts))
    }

    /// The configuration in force.
    var configuration: GatewayConfiguration { self.state.withLockedValue { $0.configuration } }
    /// 1 at the start, one more per adopted reload.
    var generation: UInt64 { self.state.withLockedValue { $0.generation } }

    /// Loads and validates the file at `path`, then adopts it; an invalid file is a failed
    /// reload (`reloadFailed`). The future: as `reload(_:)`'s.
    @discardableResult
    func reload(path: String, loader: ConfigurationLoader) -> EventLoopFuture<Void>? {
        let configuration: GatewayConfiguration
        do {
            configuration = try loader.load(path: path)
        } catch {
            self.reloadFailed(error)
            return nil
        }
        return self.reload(configuration)
    }

    /// Adopts `configuration`, validated already. The future completes once every loop has
    /// swapped the new snapshot in (and let the old one go); nil when the old configuration stays.
    @discardableResult
    func reload(_ configuration: GatewayConfiguration) -> EventLoopFuture<Void>? {
        // Backend TLS is built before anything changes: if it cannot be, the old configuration stays.
        let backendTLS: [UpstreamTLS?]
        do {
            backendTLS = try UpstreamTLS.backends(configuration)
        } catch {
            self.reloadFailed(error)
            return nil
        }
        let shared = self.shared
        let (old, generation, parts) = self.state.withLockedValue { state in
            let old = state.configuration
            state.generation += 1
            state.configuration = configuration
            state.parts = GatewayComposition.reloadableParts(for: configuration, keeping: state.parts, shared: shared)
            return (old, state.generation, state.parts)
        }
        self.warnAboutRestartOnlyChanges(from: old, to: configuration)
        let snapshot = GatewayComposition.makeSnapshot(
            configuration, generation: generation, shared: shared, parts: parts, backendTLS: backendTLS)
        GatewayComposition.warnAboutInsecureBackends(configuration, logger: self.logger)
        self.prober.apply(snapshot)
        let applied = self.workers.map { worker in
            worker.eventLoop.submit {
                worker.value.apply(snapshot)
                // Open streams are matched again: a removed route, or a `require` that now
                // refuses a stream's identity, ends it (docs/streams.md).
                worker.value.streams.reloaded { request in
                    snapshot.routes.match(
                        host: request.target.host?.name, path: request.target.path, method: request.method.rawValue
                    )?.configuration
                }
            }
        }

        shared.keyStore.update(configuration: configuration.tokens)
        self.keys.fetchNeverFetched()
        shared.processMetrics.increment(.configReload(.success))
        self.logger.info("config.reloaded", metadata: ["config.generation": "\(generation)"])
        return self.workers.first.map { EventLoopFuture.andAllComplete(applied, on: $0.eventLoop) }
    }

    /// Records a reload that failed validation; the old configuration stays.
    func reloadFailed(_ error: Error) {
        self.shared.processMetrics.increment(.configReload(.failure))
        self.logger.error("config.reload_failed", metadata: ["error": "\(error)"])
    }

    private func warnAboutRestartOnlyChanges(from old: GatewayConfiguration, to configuration: GatewayConfiguration) {
        if old.listener != configuration.listener || old.admin != configuration.admin
            || old.eventLoopThreads != configuration.eventLoopThreads
            || old.tracing != configuration.tracing
        {
            self.logger.warning(
                "config.reload_needs_restart",
                metadata: ["reason": "listener, admin, eventLoopThreads or tracing changed; restart to apply them"])
        }
        if old.sharedState != configuration.sharedState {
            // The store (its connections, flights and outcomes) belongs to the application.
            self.logger.warning(
                "config.reload_needs_restart",
                metadata: [
                    "reason":
                        "sharedState changed; the running shared state (\(old.sharedState?.description ?? "off")) is kept until a restart"
                ]
            )
        }
    }
}
