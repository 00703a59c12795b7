import NIOCore
import Testing

@testable import AuthGateway

@Suite("CIDR")
struct CIDRTests {
    private func address(_ ip: String) throws -> SocketAddress {
        try SocketAddress(ipAddress: ip, port: 1234)
    }

    @Test("IPv4 blocks contain exactly their addresses")
    func ipv4() throws {
        let block = try #require(CIDR(parsing: "10.0.0.0/8"))
        #expect(block.contains(try address("10.0.0.1")))
        #expect(block.contains(try address("10.255.255.255")))
        #expect(!block.contains(try address("11.0.0.0")))
        #expect(!block.contains(try address("9.255.255.255")))

        let odd = try #require(CIDR(parsing: "192.168.1.64/26"))
        #expect(odd.contains(try address("192.168.1.64")))
        #expect(odd.contains(try address("192.168.1.127")))
        #expect(!odd.contains(try address("192.168.1.128")))
        #expect(!odd.contains(try address("192.168.1.63")))
    }

    @Test("a bare address is a single-host block")
    func singleHost() throws {
        let v4 = try #require(CIDR(parsing: "127.0.0.1"))
        #expect(v4.prefixLength == 32)
        #expect(v4.contains(try address("127.0.0.1")))
        #expect(!v4.contains(try address("127.0.0.2")))
        let v6 = try #require(CIDR(parsing: "::1"))
        #expect(v6.prefixLength == 128)
        #expect(v6.contains(try address("::1")))
        #expect(!v6.contains(try address("::2")))
    }

    @Test("host bits are masked off")
    func masksHostBits() throws {
        let block = try #require(CIDR(parsing: "10.1.2.3/8"))
        #expect(block.network == [10, 0, 0, 0])
        #expect(block.description == "10.0.0.0/8")
        #expect(block == CIDR(parsing: "10.0.0.0/8"))
    }

    @Test("IPv6 blocks")
    func ipv6() throws {
        let block = try #require(CIDR(parsing: "fd00::/8"))
        #expect(block.contains(try address("fd12:3456::1")))
        #expect(!block.contains(try address("fe80::1")))
        #expect(block.description == "fd00::/8")
    }

    @Test("families never match each other")
    func familiesDoNotMix() throws {
        let allV4 = try #require(CIDR(parsing: "0.0.0.0/0"))
        let allV6 = try #require(CIDR(parsing: "::/0"))
        #expect(allV4.contains(try address("203.0.113.9")))
        #expect(!allV4.contains(try address("::1")))
        #expect(allV6.contains(try address("2001:db8::1")))
        #expect(!allV6.contains(try address("127.0.0.1")))
    }

    @Test(
        "invalid text is refused",
        arguments: [
            "", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "10.0.0/8", "a.b.c.d", "10.0.0.0/8/8",
            "10.0.0.0/-1", "localhost",
        ])
    func refuses(_ text: String) {
        #expect(CIDR(parsing: text) == nil)
    }
}
