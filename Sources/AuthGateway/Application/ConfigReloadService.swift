import ServiceLifecycle
import UnixSignals

/// SIGHUP reloads the configuration file; an invalid file keeps the old configuration,
/// is logged and counted (docs/operations.md).
public struct ConfigReloadService: Service {
    let application: GatewayApplication
    let path: String
    let loader: ConfigurationLoader

    public init(application: GatewayApplication, path: String, loader: ConfigurationLoader = ConfigurationLoader()) {
        self.application = application
        self.path = path
        self.loader = loader
    }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            self.application.reloader.reload(path: self.path, loader: self.loader)
        }
    }
}
