/// Everything wrong with a configuration file, each problem with the JSON path it concerns.
///
/// Loading never stops at the first problem: an operator fixing a file sees the whole list.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public struct Issue: Sendable, Equatable, CustomStringConvertible {
        /// JSON path such as `routes[2].backend`; empty for the document itself.
        public let path: String
        public let message: String

        public init(path: String, message: String) {
            self.path = path
            self.message = message
        }

        public var description: String { self.path.isEmpty ? self.message : "\(self.path): \(self.message)" }
    }

    public let issues: [Issue]

    public init(issues: [Issue]) { self.issues = issues }

    public var description: String { self.issues.map(\.description).joined(separator: "\n") }
}

/// Collects issues while a configuration is read; shared by all readers of one load.
final class IssueCollector {
    private(set) var issues: [ConfigurationError.Issue] = []

    func add(_ path: String, _ message: String) {
        self.issues.append(.init(path: path, message: message))
    }
}
