/// Why the gateway ended a long-lived stream (docs/streams.md): the label of
/// `auth_gateway_streams_closed_total{reason}`.
enum StreamCloseReason: String, Sendable, CaseIterable {
    /// The credential ran out: the token's or API key's expiry (plus the route's leeway), or its
    /// session's end by idle or maximum time, or a refused refresh.
    case expiry
    /// The browser signed out.
    case signOut = "sign_out"
    /// The provider's back-channel logout.
    case backchannel
    /// A Shared Signals event (`session-revoked`).
    case signal
    /// A reload removed the stream's route, or its new `require` refuses the stream's identity.
    case reload

    init(_ reason: SessionEndReason) {
        switch reason {
        case .signOut: self = .signOut
        case .backchannel: self = .backchannel
        case .signal: self = .signal
        case .expired: self = .expiry
        }
    }

    /// The WebSocket close frame's reason text (RFC 6455 §5.5.1; at most 123 bytes): says why,
    /// never who.
    var closeText: String {
        switch self {
        case .expiry: return "credential expired"
        case .signOut, .backchannel, .signal: return "session ended"
        case .reload: return "no longer authorized"
        }
    }
}
