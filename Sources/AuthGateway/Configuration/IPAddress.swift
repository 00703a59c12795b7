#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as 128 bits, IPv4 in its IPv4-mapped form (`::ffff:a.b.c.d`), so
/// that one comparison serves both families and a dual-stack socket's `::ffff:10.0.0.1` is
/// `10.0.0.1`.
///
/// Parsed from text without allocating (`cidr` requirements parse `client.ip` per request).
struct IPAddress: Hashable {
    /// The first and last 64 bits, in network order.
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// nil when `text` is not an IPv4 or IPv6 address.
    init?(_ text: String) {
        guard let (address, _) = Self.parse(Substring(text)) else { return nil }
        self = address
    }

    /// `text` read as an IPv4 or IPv6 address, and whether it was IPv4; nil when it is
    /// neither. Reads a `Substring` without allocating.
    static func parse(_ text: Substring) -> (address: IPAddress, isIPv4: Bool)? {
        // Longer than any address, brackets and zone ids included: no C string for it. A NUL
        // would end the C string early, and what precedes it might parse.
        let count = text.utf8.count
        guard count > 0, count <= 64, !text.utf8.contains(0) else { return nil }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { cString in
            _ = cString.initialize(from: text.utf8.lazy.map { CChar(bitPattern: $0) })
            cString[count] = 0
            var v4 = in_addr()
            if inet_pton(AF_INET, cString.baseAddress!, &v4) == 1 {
                let bits = withUnsafeBytes(of: &v4) { Self.bigEndian($0, from: 0, count: 4) }
                return (IPAddress(high: 0, low: 0xFFFF_0000_0000 | bits), true)
            }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, cString.baseAddress!, &v6) == 1 {
                let (high, low) = withUnsafeBytes(of: &v6) {
                    (Self.bigEndian($0, from: 0, count: 8), Self.bigEndian($0, from: 8, count: 8))
                }
                return (IPAddress(high: high, low: low), false)
            }
            return nil
        }
    }

    /// The address as `inet_ntop` writes it: dotted IPv4 when `asIPv4`, else IPv6 (an
    /// IPv4-mapped address as `::ffff:a.b.c.d`).
    func text(asIPv4: Bool) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            let written: UnsafePointer<CChar>?
            if asIPv4 {
                var v4 = in_addr()
                withUnsafeMutableBytes(of: &v4) { Self.storeBigEndian(self.low, count: 4, into: $0, at: 0) }
                written = inet_ntop(AF_INET, &v4, buffer.baseAddress!, socklen_t(buffer.count))
            } else {
                var v6 = in6_addr()
                withUnsafeMutableBytes(of: &v6) { bytes in
                    Self.storeBigEndian(self.high, count: 8, into: bytes, at: 0)
                    Self.storeBigEndian(self.low, count: 8, into: bytes, at: 8)
                }
                written = inet_ntop(AF_INET6, &v6, buffer.baseAddress!, socklen_t(buffer.count))
            }
            // inet_ntop fails only for a short buffer or an unknown family: neither here.
            return written.map { String(cString: $0) } ?? ""
        }
    }

    /// The 4 or 16 bytes of a `CIDR`'s network.
    init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4:
            self.init(high: 0, low: 0xFFFF_0000_0000 | bytes.withUnsafeBytes { Self.bigEndian($0, from: 0, count: 4) })
        case 16:
            let (high, low) = bytes.withUnsafeBytes {
                (Self.bigEndian($0, from: 0, count: 8), Self.bigEndian($0, from: 8, count: 8))
            }
            self.init(high: high, low: low)
        default:
            return nil
        }
    }

    /// Whether the first `prefixLength` of 128 bits equal those of `other`.
    func sharesPrefix(_ prefixLength: Int, with other: IPAddress) -> Bool {
        let highBits = min(64, max(0, prefixLength))
        let lowBits = min(64, max(0, prefixLength - 64))
        return (self.high ^ other.high) & Self.mask(highBits) == 0 && (self.low ^ other.low) & Self.mask(lowBits) == 0
    }

    private static func mask(_ bits: Int) -> UInt64 { bits == 0 ? 0 : ~UInt64(0) << (64 - bits) }

    private static func storeBigEndian(
        _ value: UInt64, count: Int, into bytes: UnsafeMutableRawBufferPointer, at start: Int
    ) {
        for index in 0..<count { bytes[start + index] = UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - index))) }
    }

    private static func bigEndian(_ bytes: UnsafeRawBufferPointer, from start: Int, count: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in start..<(start + count) { value = value << 8 | UInt64(bytes[index]) }
        return value
    }
}

extension CIDR {
    /// Whether the address is in this network; IPv4 networks contain the IPv4-mapped IPv6
    /// addresses of their members. Allocates nothing.
    func contains(_ address: IPAddress) -> Bool {
        guard let network = IPAddress(bytes: self.network) else { return false }
        let prefix = self.network.count == 4 ? 96 + self.prefixLength : self.prefixLength
        return network.sharesPrefix(prefix, with: address)
    }
}
