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

/// Its file, never its loader's environment nor the application: swift-service-lifecycle
/// describes every service at `debug` level (docs/operations.md, "What is never logged").
extension ConfigReloadService: CustomStringConvertible, CustomReflectable {
    public var description: String { "ConfigReloadService(path: \"\(self.path)\")" }
    public var customMirror: Mirror { Mirror(self, children: ["path": self.path], displayStyle: .struct) }
}
