import NIOCore
import NIOHTTP1

/// The client address `client.ip` names (docs/rate-limits.md): the peer, or — when
/// the peer is one of `trustedProxies` — the first `X-Forwarded-For` hop, from the right, that
/// is not a trusted proxy. Hops left of it were written by the client and are not believed.
enum ClientAddress {
    static func resolve(
        peerIP: String, peerIsTrustedProxy: Bool, headers: HTTPHeaders, trustedProxies: [CIDR]
    ) -> String {
        guard peerIsTrustedProxy else { return peerIP }
        // Comma-separated elements of every X-Forwarded-For line, trimmed, in order.
        let hops = headers[canonicalForm: "x-forwarded-for"].filter { !$0.isEmpty }
        guard !hops.isEmpty else { return peerIP }
        for hop in hops.reversed() {
            guard let address = try? SocketAddress(ipAddress: String(hop), port: 0) else {
                // Not an address: the first hop nobody trusted vouches for; count it as written.
                return String(hop)
            }
            if !trustedProxies.contains(where: { $0.contains(address) }) {
                return address.ipAddress ?? String(hop)
            }
        }
        // Every hop is a trusted proxy: the leftmost is the closest to the client.
        return String(hops[0])
    }
}
