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
            guard let applied = self.application.reloader.reload(path: self.path, loader: self.loader) else { continue }
            // Once no loop holds the old snapshot, its pages (a million API keys are ~300 MB)
            // and what parsing the file dropped go back to the system, here, off the event
            // loops: a reload does not leave the process at twice its size (docs/policies.md,
            // "API keys").
            try? await applied.get()
            FreedMemory.returnToSystem()
        }
    }
}

/// Its file, never its loader's environment nor the application: swift-service-lifecycle
/// describes every service at `debug` level (docs/operations.md, "What is never logged").
extension ConfigReloadService: CustomStringConvertible, CustomReflectable {
    public var description: String { "ConfigReloadService(path: \"\(self.path)\")" }
    public var customMirror: Mirror { Mirror(self, children: ["path": self.path], displayStyle: .struct) }
}
