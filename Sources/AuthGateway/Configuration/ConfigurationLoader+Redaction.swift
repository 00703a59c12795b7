/// The loader and its readers hold the process environment: every secret a configuration names
/// with `${NAME}` and every other one the process was given. They never print it
/// (docs/operations.md, "What is never logged"): swift-service-lifecycle describes each service at `debug`
/// level, and a service that holds a loader must not put the environment in that line.
extension ConfigurationLoader: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "ConfigurationLoader(environment: \(self.environment.count) variables, redacted)" }
    public var debugDescription: String { self.description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}

extension ConfigReader: CustomStringConvertible, CustomReflectable {
    var description: String { "ConfigReader(path: \"\(self.path)\")" }
    var customMirror: Mirror { Mirror(self, children: ["path": self.path], displayStyle: .class) }
}
