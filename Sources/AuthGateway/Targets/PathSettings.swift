/// `paths` (docs/forwarding.md, "Request targets"): how the request path is made canonical.
public struct PathSettings: Sendable, Equatable {
    /// What `%2F` and `%5C` (an escaped `/` or `\`) become.
    public enum EscapedSlashes: String, Sendable, CaseIterable {
        /// Refused with 400 `request.ambiguous_path`: servers disagree on whether such an escape
        /// separates segments (Envoy CVE-2021-29492).
        case reject
        /// Decoded to `/` before slashes are merged and dot segments resolved; the backend
        /// receives the decoded path.
        case decode
        /// An ordinary byte of its segment, for backends that never decode it (`check` warns).
        case keep
    }

    public var escapedSlashes = EscapedSlashes.reject
    /// Every run of `/` becomes one `/`.
    public var mergeSlashes = true

    public init(escapedSlashes: EscapedSlashes = .reject, mergeSlashes: Bool = true) {
        self.escapedSlashes = escapedSlashes
        self.mergeSlashes = mergeSlashes
    }
}
