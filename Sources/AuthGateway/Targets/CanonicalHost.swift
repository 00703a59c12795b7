/// The one canonical spelling of a request's host (docs/forwarding.md, "Request targets"):
/// lower-cased, without a trailing `.` and without the port. Routing, policies,
/// `X-Forwarded-Host` and every authorizer contract use it, so that `Admin.Example.com.:80`
/// cannot fall through to another route while a backend that drops the dot serves the admin
/// site.
///
/// Refused (`AmbiguousHost`): empty, userinfo, a byte outside an RFC 3986 host and port, a port
/// that is not 0–65535, an empty label. A reg-name is held to the unreserved characters
/// (ALPHA DIGIT - . _ ~): RFC 3986 also allows sub-delimiters and escapes there, which no DNS
/// name holds and which servers read differently.
struct CanonicalHost: Equatable, Sendable {
    /// Lower-cased, no trailing dot, no port; an IPv6 literal keeps its brackets.
    var name: Substring
    /// The port's digits when the value had a non-empty port.
    var port: Substring?

    /// `name` and `port` as the backend's `Host`.
    var authority: String {
        guard let port else { return String(self.name) }
        return self.name + ":" + port
    }

    /// Whether `value` is exactly `name`, or `name:port`: the field needs no rewriting. Compared
    /// over contiguous bytes: the generic `elementsEqual` over two UTF-8 views cost every request
    /// ~0.3 % of the gateway's CPU (measured).
    func isSpelled(as value: Substring) -> Bool {
        var value = value
        var name = self.name
        var port = self.port ?? ""
        let hasPort = self.port != nil
        return value.withUTF8 { value in
            name.withUTF8 { name in
                port.withUTF8 { port in
                    guard value.count == (hasPort ? name.count + 1 + port.count : name.count),
                        UnsafeBufferPointer(rebasing: value[..<name.count]).elementsEqual(name)
                    else { return false }
                    guard hasPort else { return true }
                    return value[name.count] == UInt8(ascii: ":")
                        && UnsafeBufferPointer(rebasing: value[(name.count + 1)...]).elementsEqual(port)
                }
            }
        }
    }

    /// Canonicalizes a `Host` value or an absolute-form authority. A value that is already
    /// canonical is returned as slices of itself, without building a string.
    static func make(_ value: Substring) throws(TargetRefusal) -> CanonicalHost {
        try Self.canonicalizing(value).host
    }

    /// `make`, and whether `value` was spelled canonically already (`isSpelled(as: value)`):
    /// then a `Host` field goes to the backend as the client sent it.
    ///
    /// A reg-name (every request's, but an IP literal's) is checked in one pass over its
    /// contiguous bytes: walking the UTF-8 view once per rule cost ~1 % of a request's CPU
    /// (measured, docs/benchmarks.md).
    static func canonicalizing(_ value: Substring) throws(TargetRefusal) -> (host: CanonicalHost, isSpelled: Bool) {
        guard !value.isEmpty else { throw .ambiguousHost(.empty) }
        guard value.utf8.first != UInt8(ascii: "[") else {
            let host = try Self.ipLiteral(value)
            return (host, host.isSpelled(as: value))
        }
        var bytes = value
        let scan = bytes.withUTF8 { RegNameScan($0) }
        if scan.hasAt { throw .ambiguousHost(.userinfo) }
        var port: Substring?
        var spelled = true
        if scan.nameLength < scan.count {
            let digits = value.utf8.index(value.startIndex, offsetBy: scan.nameLength + 1)
            if digits != value.endIndex {
                guard scan.portIsNumber else { throw .ambiguousHost(.invalidPort) }
                port = value[digits...]
            } else {
                // `host:` (an empty port, which RFC 3986 allows) is sent as `host`.
                spelled = false
            }
        }
        guard scan.nameBytesAreValid else { throw .ambiguousHost(.invalidCharacter) }
        guard !scan.hasEmptyLabel else { throw .ambiguousHost(.emptyLabel) }
        var nameLength = scan.nameLength
        // One trailing dot names the same host (a fully qualified name); two would not.
        if scan.endsWithDot {
            nameLength -= 1
            spelled = false
        }
        guard nameLength > 0, !scan.startsWithDot else { throw .ambiguousHost(.emptyLabel) }
        var name = value[..<value.utf8.index(value.startIndex, offsetBy: nameLength)]
        if scan.hasUpperCase {
            name = Substring(ASCII.lowercased(name))
            spelled = false
        }
        return (CanonicalHost(name: name, port: port), spelled)
    }

    /// What one pass over a reg-name value (`name[:port]`) learns of it.
    private struct RegNameScan {
        var count: Int
        /// Bytes before the first `:` (all of them without one).
        var nameLength: Int
        var hasAt = false
        var nameBytesAreValid = true
        /// Two dots in a row in the name.
        var hasEmptyLabel = false
        var startsWithDot = false
        var endsWithDot = false
        var hasUpperCase = false
        /// After the `:`, 1–5 digits of at most 65535.
        var portIsNumber = true

        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.count = bytes.count
            self.nameLength = bytes.count
            var previous: UInt8 = 0
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "@") { self.hasAt = true }
                if byte == UInt8(ascii: ":") {
                    self.nameLength = index
                    break
                }
                if !CanonicalHost.isRegNameByte(byte) { self.nameBytesAreValid = false }
                if byte == UInt8(ascii: ".") && previous == UInt8(ascii: ".") { self.hasEmptyLabel = true }
                if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { self.hasUpperCase = true }
                previous = byte
                index += 1
            }
            self.startsWithDot = self.nameLength > 0 && bytes[0] == UInt8(ascii: ".")
            self.endsWithDot = previous == UInt8(ascii: ".")
            guard self.nameLength < bytes.count else { return }
            let digits = bytes[(self.nameLength + 1)...]
            if digits.contains(UInt8(ascii: "@")) { self.hasAt = true }
            self.portIsNumber = CanonicalHost.isPortNumber(digits)
        }
    }

    /// An IP literal's brackets, then its port.
    private static func ipLiteral(_ value: Substring) throws(TargetRefusal) -> CanonicalHost {
        let bytes = value.utf8
        if bytes.contains(UInt8(ascii: "@")) { throw .ambiguousHost(.userinfo) }
        guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { throw .ambiguousHost(.invalidCharacter) }
        var name = value[...close]
        let port = try Self.port(after: value[bytes.index(after: close)...])
        let inside = name.utf8.dropFirst().dropLast()
        guard !inside.isEmpty, inside.allSatisfy(Self.isIPv6LiteralByte) else {
            throw .ambiguousHost(.invalidCharacter)
        }
        if name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            name = Substring(ASCII.lowercased(name))
        }
        return CanonicalHost(name: name, port: port)
    }

    /// The digits after `:` (nil for none or an empty port, which RFC 3986 allows).
    private static func port(after rest: Substring) throws(TargetRefusal) -> Substring? {
        guard !rest.isEmpty else { return nil }
        guard rest.utf8.first == UInt8(ascii: ":") else { throw .ambiguousHost(.invalidCharacter) }
        let digits = rest.dropFirst()
        guard !digits.isEmpty else { return nil }
        guard Self.isPortNumber(digits.utf8) else { throw .ambiguousHost(.invalidPort) }
        return digits
    }

    /// 1–5 decimal digits of at most 65535: the one rule for a port, a reg-name's and an IP
    /// literal's.
    fileprivate static func isPortNumber(_ digits: some Collection<UInt8>) -> Bool {
        guard !digits.isEmpty, digits.count <= 5 else { return false }
        var number = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return false }
            number = number * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return number <= 65535
    }

    fileprivate static func isRegNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Hex digits, `:` and `.` (an embedded IPv4); no zone identifier.
    private static func isIPv6LiteralByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}
