/// ASCII case-insensitive comparisons on UTF-8 views, without building lower-cased copies.
/// Header names are compared this way on every request.
enum ASCII {
    /// `text` with A–Z lower-cased; every other byte as it is.
    static func lowercased(_ text: some StringProtocol) -> String {
        String(decoding: text.utf8.map(Self.lower), as: UTF8.self)
    }

    @inline(__always)
    static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// Inlined as far as the length check: most comparisons of a header name against a known
    /// one (the rewriter tests each field against ~17 names) differ in length, and then cost no
    /// call (the call itself was ~1 % of an HTTP/1.1 request's CPU, measured).
    @inline(__always)
    static func equalsIgnoringCase(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        return Self.sameLengthEqualsIgnoringCase(lhs, rhs)
    }

    private static func sameLengthEqualsIgnoringCase(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        let a = lhs.utf8, b = rhs.utf8
        // Native strings and substrings of them (every header name and value here) are
        // contiguous: compare their bytes directly instead of stepping `String.Index`es
        // (measured: ~1 % of an HTTP/1.1 request's CPU went to the indexed loop).
        if let equal = a.withContiguousStorageIfAvailable({ x in
            b.withContiguousStorageIfAvailable { y in Self.equalsIgnoringCase(x, y) }
        }),
            let equal
        {
            return equal
        }
        var i = a.startIndex, j = b.startIndex
        while i != a.endIndex {
            if Self.lower(a[i]) != Self.lower(b[j]) { return false }
            a.formIndex(after: &i)
            b.formIndex(after: &j)
        }
        return true
    }

    /// Two byte runs of the same length, compared ignoring ASCII case.
    private static func equalsIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in a.indices where Self.lower(a[index]) != Self.lower(b[index]) { return false }
        return true
    }

    /// Byte-for-byte equality (case-sensitive, no Unicode normalization): cookie names, a cached
    /// exchange's subject token. Over contiguous bytes where the strings have them: the generic
    /// `elementsEqual` over two UTF-8 views walks one index at a time, and cost a cached exchange
    /// more than the rest of its authentication (docs/benchmarks.md).
    static func bytesEqual(_ lhs: some StringProtocol, _ rhs: some StringProtocol) -> Bool {
        let a = lhs.utf8, b = rhs.utf8
        guard a.count == b.count else { return false }
        if let equal = a.withContiguousStorageIfAvailable({ x in
            b.withContiguousStorageIfAvailable { y in x.elementsEqual(y) }
        }), let equal {
            return equal
        }
        return a.elementsEqual(b)
    }

    /// Whether `text` starts with the bytes of `prefix` (case-sensitive).
    static func hasBytePrefix(_ text: some StringProtocol, _ prefix: some StringProtocol) -> Bool {
        let a = text.utf8, b = prefix.utf8
        guard a.count >= b.count else { return false }
        if let equal = a.withContiguousStorageIfAvailable({ x in
            b.withContiguousStorageIfAvailable { y in x.prefix(y.count).elementsEqual(y) }
        }), let equal {
            return equal
        }
        return a.starts(with: b)
    }

    static func hasPrefixIgnoringCase(_ text: some StringProtocol, _ prefix: some StringProtocol) -> Bool {
        let a = text.utf8, b = prefix.utf8
        guard a.count >= b.count else { return false }
        if let equal = a.withContiguousStorageIfAvailable({ x in
            b.withContiguousStorageIfAvailable { y in
                Self.equalsIgnoringCase(UnsafeBufferPointer(rebasing: x.prefix(y.count)), y)
            }
        }), let equal {
            return equal
        }
        var i = a.startIndex, j = b.startIndex
        while j != b.endIndex {
            if Self.lower(a[i]) != Self.lower(b[j]) { return false }
            a.formIndex(after: &i)
            b.formIndex(after: &j)
        }
        return true
    }

    /// Trims spaces and horizontal tabs (HTTP optional whitespace) from both ends.
    static func trimmingOWS(_ text: Substring) -> Substring {
        // UTF-8 view: header values are scanned on every request, Characters would pay for
        // grapheme breaking.
        let bytes = text.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, Self.isOWS(bytes[start]) { bytes.formIndex(after: &start) }
        while end > start {
            let before = bytes.index(before: end)
            guard Self.isOWS(bytes[before]) else { break }
            end = before
        }
        return text[start..<end]
    }

    @inline(__always)
    static func isOWS(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
}
