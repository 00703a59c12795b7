import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

/// `client.ip` behind trusted proxies (docs/rate-limits.md): the first untrusted
/// `X-Forwarded-For` hop from the right, never what a client wrote left of it.
@Suite("ClientAddress")
struct ClientAddressTests {
    static let trusted = ["10.0.0.0/8", "127.0.0.1/32", "fd00::/8"].compactMap(CIDR.init(parsing:))

    func resolve(_ lines: [String], peerIsTrustedProxy: Bool = true) -> String {
        ClientAddress.resolve(
            peerIP: "127.0.0.1", peerIsTrustedProxy: peerIsTrustedProxy,
            headers: HTTPHeaders(lines.map { ("X-Forwarded-For", $0) }), trustedProxies: Self.trusted)
    }

    @Test("a hop a client wrote left of the proxies' hops is not believed")
    func spoofedHopsAreIgnored() {
        // The client sent "1.1.1.1, 10.9.9.9"; its proxy appended the address it saw.
        #expect(self.resolve(["1.1.1.1, 10.9.9.9, 203.0.113.9"]) == "203.0.113.9")
        #expect(self.resolve(["1.1.1.1", "10.9.9.9", "203.0.113.9, 10.0.0.2"]) == "203.0.113.9")
        #expect(self.resolve(["203.0.113.9,10.0.0.2 ,\t127.0.0.1"]) == "203.0.113.9")
    }

    @Test("only from a trusted peer; no hop: the peer; every hop trusted: the leftmost")
    func peerAndFallbacks() {
        #expect(self.resolve(["203.0.113.9"], peerIsTrustedProxy: false) == "127.0.0.1")
        #expect(self.resolve([]) == "127.0.0.1")
        #expect(self.resolve([" , ,", ""]) == "127.0.0.1")
        #expect(self.resolve(["10.0.0.1, 10.0.0.2", "127.0.0.1"]) == "10.0.0.1")
    }

    @Test("the address as inet_ntop writes it; a hop that is no address counts as written")
    func spellings() {
        #expect(self.resolve(["2001:DB8:0:0::1"]) == "2001:db8::1")
        #expect(self.resolve(["unknown, 10.0.0.2"]) == "unknown")
        #expect(self.resolve(["[2001:db8::1]"]) == "[2001:db8::1]")
        // A NUL would end a C string early (the parsers refuse one in a field value anyway).
        #expect(self.resolve(["1.2.3.4\u{0}, 10.0.0.2"]) == "1.2.3.4\u{0}")
        // A network holds its own family only: an IPv4-mapped hop is not in 10.0.0.0/8.
        #expect(self.resolve(["203.0.113.9, ::ffff:10.0.0.1"]) == "::ffff:10.0.0.1")
        #expect(self.resolve(["203.0.113.9, fd00::5"]) == "203.0.113.9")
    }

    /// The rules as first written (a list of hops through `headers[canonicalForm:]`, each hop a
    /// `SocketAddress`), kept as the model the in-place walk must agree with. It differs on a hop
    /// with a NUL only (read up to the NUL there), which the random hops do not hold.
    static func reference(headers: HTTPHeaders, trustedProxies: [CIDR]) -> String {
        let hops = headers[canonicalForm: "x-forwarded-for"].filter { !$0.isEmpty }
        guard !hops.isEmpty else { return "127.0.0.1" }
        for hop in hops.reversed() {
            guard let address = try? SocketAddress(ipAddress: String(hop), port: 0) else { return String(hop) }
            if !trustedProxies.contains(where: { $0.contains(address) }) {
                return address.ipAddress ?? String(hop)
            }
        }
        return String(hops[0])
    }

    @Test("random X-Forwarded-For lines: the walk answers as the hop list did")
    func matchesTheHopList() {
        let pieces = [
            "10.0.0.1", "10.255.1.2", "127.0.0.1", "127.0.0.2", "203.0.113.9", "1.1.1.1", "fd00::1", "FD00::2",
            "2001:db8::1", "2001:DB8:0:0:0:0:0:1", "::ffff:10.0.0.1", "::ffff:203.0.113.9", "::1", "unknown",
            "010.0.0.1", "1.2.3", "[::1]", "", " ", "\t", "10.0.0.1:80", "é", "1.2.3.4 5",
        ]
        let separators = [",", ", ", " ,", ",,", ", \t"]
        var random = SeededRandom(seed: 0x5EED_C11E)
        var mismatches: [String] = []
        for _ in 0..<20_000 {
            var headers = HTTPHeaders()
            for _ in 0..<random.int(0...3) {
                if random.chance(30) { headers.add(name: "X-Other", value: random.pick(pieces)) }
                var line = random.pick(pieces)
                for _ in 0..<random.int(0...3) { line += random.pick(separators) + random.pick(pieces) }
                headers.add(name: random.pick(["X-Forwarded-For", "x-forwarded-for", "X-FORWARDED-FOR"]), value: line)
            }
            let expected = Self.reference(headers: headers, trustedProxies: Self.trusted)
            let got = ClientAddress.resolve(
                peerIP: "127.0.0.1", peerIsTrustedProxy: true, headers: headers, trustedProxies: Self.trusted)
            if got != expected, mismatches.count < 5 { mismatches.append("\(headers): \(got) != \(expected)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }
}
