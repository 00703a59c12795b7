/// A value that must never reach a log line, an error message or `/healthz`: a client secret, a
/// database password (docs/operations.md, "What is never logged"). It prints as `<redacted>` wherever it is
/// interpolated, described (`String(describing:)`, `String(reflecting:)`) or dumped (no
/// children to reflect), so a configuration or a service that holds one can be printed whole.
public struct Secret: Sendable, Equatable, ExpressibleByStringLiteral, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    public let value: String

    public init(_ value: String) { self.value = value }

    public init(stringLiteral value: String) { self.value = value }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}
