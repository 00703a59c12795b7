/// Why a request target cannot be decided on (docs/forwarding.md, "Request targets").
enum TargetRefusal: Error, Equatable, Sendable {
    /// Not a request target: a byte outside visible ASCII, a fragment, neither origin-form nor
    /// an http(s) absolute-form, or a `%` not followed by two hex digits. 400
    /// `request.invalid_path`.
    case malformed
    /// A spelling that servers read differently: 400 `request.ambiguous_path`.
    case ambiguousPath(AmbiguousPath)
    /// A host that servers read differently, or two hosts: 400 `request.ambiguous_host`.
    case ambiguousHost(AmbiguousHost)

    /// The error the gateway answers with.
    var error: GatewayError {
        switch self {
        case .malformed: return .invalidPath
        case .ambiguousPath(let reason): return .ambiguousPath(reason.description)
        case .ambiguousHost(let reason): return .ambiguousHost(reason.description)
        }
    }
}

/// What made a path ambiguous; its description is the problem's detail (never the path itself).
enum AmbiguousPath: Sendable, Equatable, CustomStringConvertible {
    case escapedSlash
    case backslash
    case controlByte
    case invalidUTF8
    case dotSegmentWithParameter
    case doubleEncoding
    case climbsAboveRoot
    /// Ends in a `.` or `..` segment: servers resolve it with or without the trailing slash
    /// (Python's `normpath`: `/admin/.` is `/admin`), or trim trailing dots first (Caddy before
    /// 2.7, Windows: `/admin/..` is `/admin/`).
    case endsInDotSegment
    /// Names another route read leniently, without case or trailing dots and spaces
    /// (`LenientRoutes`): decided with the routes.
    case lenientVariant

    var description: String {
        switch self {
        case .escapedSlash: return "The path holds an escaped \"/\" or \"\\\" (%2F, %5C)"
        case .backslash: return "The path holds a backslash"
        case .controlByte: return "The path holds an escaped NUL or control byte"
        case .invalidUTF8: return "The path's escapes are not valid UTF-8 once decoded"
        case .dotSegmentWithParameter: return "The path holds a \".\" or \"..\" segment followed by \";\""
        case .doubleEncoding: return "The path would change if decoded a second time (double encoding)"
        case .climbsAboveRoot: return "The path climbs above \"/\""
        case .endsInDotSegment: return "The path ends in a \".\" or \"..\" segment"
        case .lenientVariant:
            return "The path names another route when case, or trailing dots and spaces, are ignored"
        }
    }
}

/// What made a host ambiguous.
enum AmbiguousHost: Sendable, Equatable, CustomStringConvertible {
    case empty
    case userinfo
    case invalidCharacter
    case invalidPort
    case emptyLabel
    case several
    case differsFromAuthority

    var description: String {
        switch self {
        case .empty: return "The Host is empty"
        case .userinfo: return "The Host carries userinfo (\"@\")"
        case .invalidCharacter: return "The Host holds a byte outside an RFC 3986 host and port"
        case .invalidPort: return "The Host's port is not a port number"
        case .emptyLabel: return "The Host has an empty label (\"..\" or a leading \".\")"
        case .several: return "The request carries more than one Host"
        case .differsFromAuthority: return "The Host differs from the request target's authority"
        }
    }
}
