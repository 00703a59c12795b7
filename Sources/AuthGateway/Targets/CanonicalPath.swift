/// The one canonical spelling of a request path (docs/forwarding.md, "Request targets"): what
/// routes match, policies read, DPoP's `htu` is compared with, every authorizer contract decides
/// on, and the backend receives.
///
/// In this order: percent-escapes of unreserved characters decoded and the hex of the others
/// upper-cased; `%2F`/`%5C` as `PathSettings.escapedSlashes` says; with `mergeSlashes`, runs of
/// `/` merged; then `.` and `..` segments resolved (RFC 3986 §5.2.4). Spellings that servers
/// read differently are refused rather than guessed at (`AmbiguousPath`). Envoy's answer to
/// CVE-2021-29492 (`normalize_path`, `merge_slashes`, `path_with_escaped_slashes_action`) is the
/// model.
///
/// Invariants (tested as properties): the result is its own canonical form; it is never longer
/// than its input; with the default settings it holds no `//`, `/./`, `/../`, `%2F` or `%5C`.
enum CanonicalPath {
    /// The canonical form of `raw`, an origin-form path (starting with `/`, no query, only
    /// visible ASCII: `RequestTarget` checked the bytes).
    ///
    /// Most paths hold nothing to decode, merge or resolve: one scan finds that and returns the
    /// input as it is.
    static func make(_ raw: Substring, settings: PathSettings) throws(TargetRefusal) -> String {
        var previous: UInt8 = 0
        for byte in raw.utf8 {
            if Self.startsRebuild(byte, after: previous) { return try Self.rebuild(raw, settings: settings) }
            previous = byte
        }
        return String(raw)
    }

    /// Whether `byte`, after `previous`, is where a path stops being canonical as it is: an
    /// escape, a backslash, `//`, or a `/.` that may be a dot segment. The one fast-path rule,
    /// which `RequestTarget`'s single scan of a request target applies too.
    @inline(__always)
    static func startsRebuild(_ byte: UInt8, after previous: UInt8) -> Bool {
        byte == .percent || byte == .backslash || (previous == .slash && (byte == .slash || byte == .dot))
    }

    /// The slow path: decode, check, then resolve the segments.
    static func rebuild(_ raw: Substring, settings: PathSettings) throws(TargetRefusal) -> String {
        let decoded = try Self.decode(raw, escapedSlashes: settings.escapedSlashes)
        return try Self.resolve(decoded, mergeSlashes: settings.mergeSlashes)
    }

    /// Unreserved escapes decoded, the others' hex upper-cased, `%2F`/`%5C` handled; refuses a
    /// raw backslash, an escaped control byte, escapes that are not UTF-8 once decoded, and
    /// double encoding.
    static func decode(
        _ raw: Substring, escapedSlashes: PathSettings.EscapedSlashes
    ) throws(TargetRefusal) -> [UInt8] {
        let bytes = raw.utf8
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        // Every escape decoded: what a server that decodes the whole path reads. It must be
        // valid UTF-8, and decoding it again must change nothing.
        var plain: [UInt8] = []
        plain.reserveCapacity(bytes.count)
        var sawHighByte = false
        var sawPercent = false
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            if byte == .backslash { throw .ambiguousPath(.backslash) }
            guard byte == .percent else {
                output.append(byte)
                plain.append(byte)
                continue
            }
            guard index != bytes.endIndex, let high = hexValue(bytes[index]) else { throw .malformed }
            index = bytes.index(after: index)
            guard index != bytes.endIndex, let low = hexValue(bytes[index]) else { throw .malformed }
            index = bytes.index(after: index)
            let value = high << 4 | low
            switch value {
            case 0x00...0x1F, 0x7F:
                throw .ambiguousPath(.controlByte)
            case .slash, .backslash:
                switch escapedSlashes {
                case .reject: throw .ambiguousPath(.escapedSlash)
                case .decode: output.append(.slash)
                case .keep: output.append(contentsOf: [.percent, upperHex(high), upperHex(low)])
                }
                plain.append(value)
            default:
                if isUnreserved(value) {
                    output.append(value)
                } else {
                    output.append(contentsOf: [.percent, upperHex(high), upperHex(low)])
                    sawHighByte = sawHighByte || value >= 0x80
                    sawPercent = sawPercent || value == .percent
                }
                plain.append(value)
            }
        }
        if sawHighByte, String(validating: plain, as: UTF8.self) == nil { throw .ambiguousPath(.invalidUTF8) }
        if sawPercent, Self.holdsEscape(plain) { throw .ambiguousPath(.doubleEncoding) }
        return output
    }

    /// Whether `bytes` hold a `%` followed by two hex digits: an escape a second decoding would
    /// turn into something else (`%252E` decodes to `%2E`, then to `.`).
    private static func holdsEscape(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index + 2 < bytes.count {
            if bytes[index] == .percent, hexValue(bytes[index + 1]) != nil, hexValue(bytes[index + 2]) != nil {
                return true
            }
            index += 1
        }
        return false
    }

    /// Merges slashes (when asked) and resolves `.` and `..` (RFC 3986 §5.2.4); `path` starts
    /// with `/`. A segment `.` or `..` followed by a path parameter (`..;x`, also `..%3B`) is
    /// refused: servers that strip parameters read it as a dot segment, others as a name. So is
    /// a last segment `.` or `..`: servers that trim trailing dots before matching (Caddy before
    /// 2.7, Windows) read `/admin/..` as `/admin/`, Python's `normpath` reads `/admin/.` as
    /// `/admin`.
    static func resolve(_ path: [UInt8], mergeSlashes: Bool) throws(TargetRefusal) -> String {
        var kept: [ArraySlice<UInt8>] = []
        let parts = path.split(separator: .slash, omittingEmptySubsequences: false).dropFirst()
        var remaining = parts.count
        for segment in parts {
            remaining -= 1
            let isLast = remaining == 0
            switch Self.kind(of: segment) {
            case .dot:
                // `/admin/.` is `/admin/` to nginx, `/admin` to Python's `normpath`.
                if isLast { throw .ambiguousPath(.endsInDotSegment) }
            case .dotDot:
                guard kept.popLast() != nil else { throw .ambiguousPath(.climbsAboveRoot) }
                // `/admin/..` is `/` to nginx, `/admin/` where trailing dots are trimmed first.
                if isLast { throw .ambiguousPath(.endsInDotSegment) }
            case .dotWithParameter:
                throw .ambiguousPath(.dotSegmentWithParameter)
            case .name:
                // An empty segment is a repeated slash, or the trailing one (always kept).
                if segment.isEmpty && mergeSlashes && !isLast { continue }
                kept.append(segment)
            }
        }
        var output: [UInt8] = []
        output.reserveCapacity(path.count)
        for segment in kept {
            output.append(.slash)
            output.append(contentsOf: segment)
        }
        if output.isEmpty { output.append(.slash) }
        return String(decoding: output, as: UTF8.self)
    }

    private enum SegmentKind { case dot, dotDot, dotWithParameter, name }

    private static func kind(of segment: ArraySlice<UInt8>) -> SegmentKind {
        guard segment.first == .dot else { return .name }
        var rest = segment.dropFirst()
        if rest.first == .dot { rest = rest.dropFirst() }
        let dots = segment.count - rest.count
        if rest.isEmpty { return dots == 1 ? .dot : .dotDot }
        if rest.first == .semicolon || Self.startsWithEscapedSemicolon(rest) { return .dotWithParameter }
        return .name
    }

    private static func startsWithEscapedSemicolon(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count >= 3 else { return false }
        let start = bytes.startIndex
        return bytes[start] == .percent && bytes[start + 1] == UInt8(ascii: "3")
            && bytes[start + 2] == UInt8(ascii: "B")
    }
}

extension UInt8 {
    fileprivate static let percent = UInt8(ascii: "%")
    fileprivate static let slash = UInt8(ascii: "/")
    fileprivate static let backslash = UInt8(ascii: "\\")
    fileprivate static let dot = UInt8(ascii: ".")
    fileprivate static let semicolon = UInt8(ascii: ";")
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
}

private func upperHex(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
}

/// RFC 3986 §2.3: ALPHA DIGIT - . _ ~
private func isUnreserved(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"),
        UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
        return true
    default:
        return false
    }
}
