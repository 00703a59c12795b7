/// Parses `Cookie` header values (RFC 6265 §5.4 shape: `a=1; b=2`). On the path of every
/// session request (the session handle, the upstream rewrite) and of cookie tokens: it scans the
/// value's contiguous UTF-8 bytes by offset and allocates nothing until something is rewritten
/// (measured: stepping `String.Index`es and Foundation's `contains` cost a session request
/// about 2 % of its CPU; docs/benchmarks.md).
enum CookieHeader {
    /// The `name=value` pairs of one `Cookie` value, in order, names and values trimmed and a
    /// quoted value unquoted; parts without `=` are skipped.
    static func pairs(in header: String) -> Pairs { Pairs(header: header) }

    struct Pairs: Sequence {
        let header: String

        init(header: String) {
            var header = header
            header.makeContiguousUTF8()
            self.header = header
        }

        struct Iterator: IteratorProtocol {
            let header: String
            var offset = 0

            mutating func next() -> (name: Substring, value: Substring)? {
                while let part = CookieHeader.part(of: self.header, from: &self.offset) {
                    guard let value = part.unquotedValue else { continue }
                    return (self.header.substring(part.name), self.header.substring(value))
                }
                return nil
            }
        }

        func makeIterator() -> Iterator { Iterator(header: self.header) }
    }

    /// The `Cookie` value without cookie `name` and the cookies whose names start with `prefix`
    /// (a part without `=` counts as a name; nil when nothing is left); the value itself,
    /// unchanged and not copied, when it has neither.
    static func removing(_ header: String, name: String, prefix: String) -> String? {
        func isRemoved(_ cookieName: Substring) -> Bool {
            ASCII.bytesEqual(cookieName, name) || ASCII.hasBytePrefix(cookieName, prefix)
        }
        var header = header
        header.makeContiguousUTF8()
        var offset = 0
        var kept = 0
        while let part = Self.part(of: header, from: &offset) {
            guard isRemoved(header.substring(part.name)) else {
                kept += 1
                continue
            }
            // The only cookie (a browser that holds just the session cookie): nothing is left,
            // without building anything.
            if kept == 0, Self.part(of: header, from: &offset) == nil { return nil }
            return Self.rebuilt(header) { cookieName, _ in isRemoved(cookieName) ? .drop : .keep }
        }
        return header
    }

    /// The `Cookie` value with cookie `name` removed (nil when nothing is left) or, with
    /// `replacement`, its value replaced.
    static func rewrite(_ header: String, name: String, replacement: String?) -> String? {
        var header = header
        header.makeContiguousUTF8()
        return Self.rebuilt(header) { cookieName, hasValue in
            guard hasValue, ASCII.bytesEqual(cookieName, name) else { return .keep }
            return replacement.map { .replace("\(name)=\($0)") } ?? .drop
        }
    }

    private enum PartFate {
        case keep
        case drop
        case replace(String)
    }

    /// The parts of `header` (trimmed, empty ones left out) as `fate` decides by cookie name
    /// (the whole part when it has no `=`, with `hasValue` false), in one string; nil when
    /// nothing is left.
    private static func rebuilt(_ header: String, fate: (_ name: Substring, _ hasValue: Bool) -> PartFate) -> String? {
        var result = ""
        result.reserveCapacity(header.utf8.count)
        var offset = 0
        while let part = Self.part(of: header, from: &offset) {
            let kept: Substring
            switch fate(header.substring(part.name), part.unquotedValue != nil) {
            case .keep: kept = header.substring(part.whole)
            case .drop: continue
            case .replace(let replacement): kept = replacement[...]
            }
            if !result.isEmpty { result += "; " }
            result += kept
        }
        return result.isEmpty ? nil : result
    }

    /// One non-empty `;`-separated part, as byte offsets into `header`: the whole part and its
    /// name, trimmed of optional whitespace, and its value (trimmed and unquoted; nil when the
    /// part has no `=`, the name then being the whole part). Empty parts are skipped; nil after the last.
    /// `offset` moves past the part. `header` must be contiguous UTF-8 (the callers make it so).
    private static func part(of header: String, from offset: inout Int) -> Part? {
        let found = header.utf8.withContiguousStorageIfAvailable { bytes -> Part? in
            while offset < bytes.count {
                var end = offset
                while end < bytes.count, bytes[end] != UInt8(ascii: ";") { end += 1 }
                let whole = Self.trimmed(offset..<end, in: bytes)
                offset = end < bytes.count ? end + 1 : end
                guard !whole.isEmpty else { continue }
                var equals = whole.lowerBound
                while equals < whole.upperBound, bytes[equals] != UInt8(ascii: "=") { equals += 1 }
                guard equals < whole.upperBound else { return Part(whole: whole, name: whole, unquotedValue: nil) }
                var value = Self.trimmed(equals + 1..<whole.upperBound, in: bytes)
                if value.count >= 2, bytes[value.lowerBound] == UInt8(ascii: "\""),
                    bytes[value.upperBound - 1] == UInt8(ascii: "\"")
                {
                    value = value.lowerBound + 1..<value.upperBound - 1
                }
                return Part(
                    whole: whole, name: Self.trimmed(whole.lowerBound..<equals, in: bytes), unquotedValue: value)
            }
            return nil
        }
        // A native string, made contiguous by the caller, always has contiguous storage.
        return found ?? nil
    }

    private struct Part {
        var whole: Range<Int>
        var name: Range<Int>
        /// Without the quotes of a quoted value; nil when the part has no `=`.
        var unquotedValue: Range<Int>?
    }

    private static func trimmed(_ range: Range<Int>, in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        var start = range.lowerBound, end = range.upperBound
        while start < end, ASCII.isOWS(bytes[start]) { start += 1 }
        while end > start, ASCII.isOWS(bytes[end - 1]) { end -= 1 }
        return start..<end
    }
}

extension String {
    /// The part of a string at these UTF-8 offsets (constant time for a native string; the
    /// offsets must fall on character boundaries, as ASCII delimiters do).
    fileprivate func substring(_ offsets: Range<Int>) -> Substring {
        let utf8 = self.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: offsets.lowerBound)
        return self[start..<utf8.index(start, offsetBy: offsets.count)]
    }
}
