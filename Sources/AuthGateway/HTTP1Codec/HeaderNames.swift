/// Case-insensitive header name matching on raw bytes.
enum HeaderNames {
    /// Headers that describe one connection and are never forwarded (RFC 9110 §7.6.1), plus
    /// `Expect`, which the gateway answers itself.
    private static let hopByHop: [[UInt8]] = [
        "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "proxy-authorization", "proxy-authenticate",
        "expect",
    ].map { Array($0.utf8) }
    private static let contentLength = Array("content-length".utf8)
    private static let transferEncoding = Array("transfer-encoding".utf8)
    private static let connection = Array("connection".utf8)
    private static let requestID = Array("x-request-id".utf8)

    static func kind(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> HeaderKind {
        // Most names are none of these: the length check rejects them without a byte compare.
        switch end - start {
        case 14: if Self.equals(bytes, start, end, Self.contentLength) { return .contentLength }
        case 17: if Self.equals(bytes, start, end, Self.transferEncoding) { return .transferEncoding }
        case 10:
            if Self.equals(bytes, start, end, Self.connection) { return .connection }
            if Self.equals(bytes, start, end, Self.hopByHop[0]) { return .hopByHop }
        case 12: if Self.equals(bytes, start, end, Self.requestID) { return .requestID }
        case 2, 6, 7, 16, 18, 19:
            for name in Self.hopByHop where Self.equals(bytes, start, end, name) { return .hopByHop }
        default: break
        }
        return .other
    }

    /// `bytes[start..<end]` equals the lower-case `name`, ignoring ASCII case.
    @inline(__always)
    static func equals(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ name: [UInt8]) -> Bool {
        guard end - start == name.count else { return false }
        var index = 0
        while index < name.count {
            if ASCII.lower(bytes[start + index]) != name[index] { return false }
            index += 1
        }
        return true
    }

    /// Whether the comma-separated list in `bytes[start..<end]` holds `token` (lower-case),
    /// ignoring case and optional whitespace.
    static func listContains(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, token: [UInt8]) -> Bool {
        var found = false
        Self.forEachListElement(bytes, start, end) { elementStart, elementEnd in
            if Self.equals(bytes, elementStart, elementEnd, token) { found = true }
        }
        return found
    }

    /// Whether the comma-separated list in `bytes[start..<end]` names the header
    /// `bytes[nameStart..<nameEnd]`.
    static func listContains(
        _ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, nameStart: Int, nameEnd: Int
    ) -> Bool {
        var found = false
        Self.forEachListElement(bytes, start, end) { elementStart, elementEnd in
            guard elementEnd - elementStart == nameEnd - nameStart else { return }
            var index = 0
            while index < nameEnd - nameStart {
                if ASCII.lower(bytes[elementStart + index]) != ASCII.lower(bytes[nameStart + index]) { return }
                index += 1
            }
            found = true
        }
        return found
    }

    /// Calls `body` with each whitespace-trimmed element of a comma-separated list while it
    /// returns true; false at the first empty element (an empty list is one) or when `body`
    /// returns false. For the fields that frame a message, where an element skipped by one
    /// parser and counted by another is two readings of where the message ends.
    @inline(__always)
    static func forEachListElementRefusingEmpty(
        _ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ body: (Int, Int) -> Bool
    ) -> Bool {
        Self.forEachTrimmedElement(bytes, start, end) { s, e in e > s && body(s, e) }
    }

    /// Calls `body` with each non-empty, whitespace-trimmed element of a comma-separated list.
    @inline(__always)
    static func forEachListElement(
        _ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ body: (Int, Int) -> Void
    ) {
        _ = Self.forEachTrimmedElement(bytes, start, end) { s, e in
            if e > s { body(s, e) }
            return true
        }
    }

    /// Calls `body` with the bounds of each element of a comma-separated list, trimmed of
    /// spaces and tabs (an empty element as `s == e`), while it returns true; false when it
    /// did not.
    @inline(__always)
    private static func forEachTrimmedElement(
        _ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ body: (Int, Int) -> Bool
    ) -> Bool {
        var elementStart = start
        var index = start
        while index <= end {
            if index == end || bytes[index] == UInt8(ascii: ",") {
                var s = elementStart, e = index
                while s < e, bytes[s] == UInt8(ascii: " ") || bytes[s] == UInt8(ascii: "\t") { s += 1 }
                while e > s, bytes[e - 1] == UInt8(ascii: " ") || bytes[e - 1] == UInt8(ascii: "\t") { e -= 1 }
                guard body(s, e) else { return false }
                elementStart = index + 1
            }
            index += 1
        }
        return true
    }
}
