/// `routes[].streams` (docs/streams.md): what happens to a long-lived response of the route — a
/// WebSocket tunnel, a streamed HTTP/1.1 response, an HTTP/2 stream, a gRPC call — when the
/// credential that opened it runs out.
public struct StreamsConfiguration: Sendable, Equatable {
    /// End the stream at the credential's expiry plus `leewaySeconds`.
    public var closeAtExpiry = true
    public var leewaySeconds = 30

    public init(closeAtExpiry: Bool = true, leewaySeconds: Int = 30) {
        self.closeAtExpiry = closeAtExpiry
        self.leewaySeconds = leewaySeconds
    }
}

/// `signals` (docs/streams.md, "Shared Signals"): the receiver of Security Event Tokens pushed
/// by the issuer (RFC 8935, RFC 8417; CAEP events).
public struct SignalsConfiguration: Sendable, Equatable {
    /// An entry of `tokens.issuers`: its keys sign the events, its name is their `iss`.
    public var issuer: String
    /// The `aud` every event must carry.
    public var audience: String
    /// Where the transmitter posts (answered before routes).
    public var path = "/.gateway/signals"
    /// Peers allowed to post; nil: any (the signature is the proof).
    public var trustedPeers: [CIDR]? = nil
    /// How old an event's `iat` may be, and how far in the future (with the issuer's leeway).
    public var maxAgeSeconds = 300

    public init(issuer: String, audience: String) {
        self.issuer = issuer
        self.audience = audience
    }
}
