import NIOCore

/// An IPv4 or IPv6 network such as `10.0.0.0/8` or `fd00::/8`, for `trustedProxies`.
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    /// Network address bytes (4 or 16), already masked.
    public let network: [UInt8]
    public let prefixLength: Int

    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = CIDR.addressBytes(String(parts[0])) else { return nil }
        let maxPrefix = address.count * 8
        var prefix = maxPrefix
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...maxPrefix).contains(parsed) else { return nil }
            prefix = parsed
        }
        self.prefixLength = prefix
        self.network = CIDR.mask(address, prefix: prefix)
    }

    public func contains(_ address: SocketAddress) -> Bool {
        guard let bytes = CIDR.bytes(of: address), bytes.count == self.network.count else { return false }
        return CIDR.mask(bytes, prefix: self.prefixLength) == self.network
    }

    public var description: String {
        let text: String
        if let address = try? SocketAddress(packedIPAddress: ByteBuffer(bytes: self.network), port: 0),
            let ip = address.ipAddress
        {
            text = ip
        } else {
            text = self.network.map(String.init).joined(separator: ".")
        }
        return "\(text)/\(self.prefixLength)"
    }

    static func addressBytes(_ text: String) -> [UInt8]? {
        guard let address = try? SocketAddress(ipAddress: text, port: 0) else { return nil }
        return CIDR.bytes(of: address)
    }

    static func bytes(of address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        case .unixDomainSocket:
            return nil
        }
    }

    private static func mask(_ bytes: [UInt8], prefix: Int) -> [UInt8] {
        var result = bytes
        for index in result.indices {
            let bitsInByte = max(0, min(8, prefix - index * 8))
            result[index] &= bitsInByte == 0 ? 0 : ~UInt8(0) << (8 - bitsInByte)
        }
        return result
    }
}
