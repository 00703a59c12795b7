import NIOCore
import Testing

@testable import AuthGateway

@Suite("IPAddress")
struct IPAddressTests {
    @Test("IPv4 and IPv6 text; IPv4 in its IPv4-mapped form")
    func parsing() throws {
        #expect(IPAddress("10.1.2.3") == IPAddress(high: 0, low: 0xFFFF_0A01_0203))
        #expect(IPAddress("::ffff:10.1.2.3") == IPAddress("10.1.2.3"))
        #expect(IPAddress("::1") == IPAddress(high: 0, low: 1))
        #expect(IPAddress("2001:db8::1") == IPAddress(high: 0x2001_0DB8_0000_0000, low: 1))
        #expect(IPAddress("0:0:0:0:0:0:0:1") == IPAddress("::1"))
        for text in [
            "", "x", "10.0.0", "10.0.0.256", "10.0.0.0/8", "[::1]", "::1%eth0", " 10.0.0.1",
            String(repeating: "1", count: 100),
        ] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
    }

    @Test("CIDR containment agrees with the SocketAddress one, and IPv4 networks hold mapped addresses")
    func containment() throws {
        let networks = [
            "10.0.0.0/8", "192.168.1.64/26", "0.0.0.0/0", "127.0.0.1", "fd00::/8", "2001:db8::/32", "::/0", "::1",
        ]
        let addresses = [
            "10.0.0.1", "10.255.255.255", "11.0.0.0", "192.168.1.64", "192.168.1.128", "127.0.0.1", "127.0.0.2",
            "fd12::1",
            "fe80::1", "2001:db8:ffff::1", "2001:db9::1", "::1", "::2",
        ]
        for network in networks {
            let cidr = try #require(CIDR(parsing: network))
            for text in addresses {
                let address = try #require(IPAddress(text))
                // One 128-bit space: an IPv6 network holds the IPv4 addresses whose mapped
                // form it covers (`::/0` all of them), where SocketAddress families never mix.
                if cidr.network.count == 16 && !text.contains(":") {
                    #expect(cidr.contains(address) == (network == "::/0"), "\(text) in \(network)")
                    continue
                }
                #expect(
                    cidr.contains(address) == cidr.contains(try SocketAddress(ipAddress: text, port: 0)),
                    "\(text) in \(network)")
            }
        }
        #expect(try #require(CIDR(parsing: "10.0.0.0/8")).contains(try #require(IPAddress("::ffff:10.9.8.7"))))
        #expect(!(try #require(CIDR(parsing: "10.0.0.0/8")).contains(try #require(IPAddress("::a09:807")))))
    }
}
