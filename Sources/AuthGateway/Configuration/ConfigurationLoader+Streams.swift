/// Reading `routes[].streams` and `signals` (docs/streams.md).
extension ConfigurationLoader {
    /// A route's `streams`; the defaults when absent.
    static func streams(_ entry: ConfigReader) -> StreamsConfiguration {
        guard let section = entry.object("streams") else { return StreamsConfiguration() }
        defer { section.finish() }
        var streams = StreamsConfiguration()
        streams.closeAtExpiry = section.bool("closeAtExpiry") ?? true
        streams.leewaySeconds = section.duration("leewaySeconds", minimum: 0) ?? 30
        return streams
    }

    /// `signals`: the Shared Signals receiver. Its issuer must be an entry of `tokens.issuers`
    /// (whose keys sign the events) and its path must not hide the gateway's other endpoints.
    static func signals(
        _ root: ConfigReader, tokens: TokensConfiguration?, signInPrefix: String?
    )
        -> SignalsConfiguration?
    {
        guard let section = root.object("signals") else { return nil }
        defer { section.finish() }
        let issuer = section.requiredString("issuer")
        let audience = section.requiredString("audience")
        let path = section.string("path") ?? "/.gateway/signals"
        if !Self.isPlainPath(path) || path == "/" || path.hasSuffix("/") {
            section.error("path", "must be a path starting with \"/\" and not ending with \"/\"")
        } else if let signInPrefix,
            ["sign-in", "callback", "sign-out", "backchannel-logout"].contains(where: { path == signInPrefix + $0 })
        {
            section.error("path", "is one of the sign-in endpoints under browserSignIn.pathPrefix (\(signInPrefix))")
        }
        var peers: [CIDR]?
        if let list = section.stringArray("trustedPeers") {
            peers = []
            for (index, text) in list.enumerated() {
                if let cidr = CIDR(parsing: text) {
                    peers?.append(cidr)
                } else {
                    section.error("trustedPeers[\(index)]", "\"\(text)\" is not an IP address or CIDR block")
                }
            }
        }
        let maxAge = section.duration("maxAgeSeconds") ?? 300
        if let issuer, let tokens, !tokens.issuers.contains(where: { $0.issuer == issuer }) {
            section.error("issuer", "\"\(issuer)\" is not an entry of tokens.issuers (its keys sign the events)")
        }
        guard let issuer, let audience else { return nil }
        var signals = SignalsConfiguration(issuer: issuer, audience: audience)
        signals.path = path
        signals.trustedPeers = peers
        signals.maxAgeSeconds = maxAge
        return signals
    }
}
