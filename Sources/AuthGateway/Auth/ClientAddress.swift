import NIOCore
import NIOHTTP1

/// The client address `client.ip` names (docs/rate-limits.md): the peer, or — when
/// the peer is one of `trustedProxies` — the first `X-Forwarded-For` hop, from the right, that
/// is not a trusted proxy. Hops left of it were written by the client and are not believed.
///
/// Hops are the comma-separated elements of every `X-Forwarded-For` line, trimmed, empty ones
/// skipped. A hop is read in place (no list of hops, no `SocketAddress`): a rate limit by
/// `client.ip` asks for it on every request.
enum ClientAddress {
    static func resolve(
        peerIP: String, peerIsTrustedProxy: Bool, headers: HTTPHeaders, trustedProxies: [CIDR]
    ) -> String {
        guard peerIsTrustedProxy else { return peerIP }
        var leftmost: Substring?
        for (name, line) in headers.reversed() where ASCII.equalsIgnoringCase(name, "x-forwarded-for") {
            let bytes = line.utf8
            var end = bytes.endIndex
            while true {
                let comma = bytes[..<end].lastIndex(of: UInt8(ascii: ","))
                let start = comma.map { bytes.index(after: $0) } ?? bytes.startIndex
                let hop = ASCII.trimmingOWS(line[start..<end])
                if !hop.isEmpty {
                    if let client = Self.client(hop, trustedProxies: trustedProxies) { return client }
                    leftmost = hop
                }
                guard let comma else { break }
                end = comma
            }
        }
        // No hop, or every hop a trusted proxy: the leftmost is the closest to the client.
        return leftmost.map(String.init) ?? peerIP
    }

    /// nil when `hop` is a trusted proxy's address. Otherwise the client it names: the address
    /// as `inet_ntop` writes it, or — not an address — the hop as written (the first hop nobody
    /// trusted vouches for). A network holds only addresses of its own family.
    private static func client(_ hop: Substring, trustedProxies: [CIDR]) -> String? {
        guard let (address, isIPv4) = IPAddress.parse(hop) else { return String(hop) }
        let family = isIPv4 ? 4 : 16
        if trustedProxies.contains(where: { $0.network.count == family && $0.contains(address) }) { return nil }
        return address.text(asIPv4: isIPv4)
    }
}
