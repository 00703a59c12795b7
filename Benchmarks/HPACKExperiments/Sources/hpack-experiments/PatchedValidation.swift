/// The validation as it would be offered upstream: the same three checks, accepting exactly the
/// same strings, run over the contiguous UTF-8 of the string instead of through
/// `String.UTF8View`'s iterator.
///
/// Values are scanned eight bytes at a time: one unaligned 64-bit load, then the classic
/// "has a zero byte" bit trick (`(w - 0x01…01) & ~w & 0x80…80` is non-zero if and only if some
/// byte of `w` is zero) applied to `w ^ c…c` for each forbidden byte `c`, or its "has a byte
/// less than n" form for the CTL range. The trick is exact for the question asked here (is there
/// such a byte at all); it is only imprecise about which byte, which is never needed. Names,
/// which are short, are checked byte by byte against a 128-bit set held in two constants. A
/// string without contiguous UTF-8 (a bridged `NSString`) falls back to the same per-byte
/// predicate through its `UTF8View`, as upstream does today.
enum PatchedValidation {
    static func isValidPseudoHeaderValue(_ value: String) -> Bool {
        if let valid = value.utf8.withContiguousStorageIfAvailable(isValidPseudoHeaderValue(bytes:)) {
            return valid
        }
        return isValidPseudoHeaderValueFallback(value)
    }

    static func isValidFieldValue(_ value: String) -> Bool {
        if let valid = value.utf8.withContiguousStorageIfAvailable(isValidFieldValue(bytes:)) {
            return valid
        }
        return isValidFieldValueFallback(value)
    }

    /// Whether a field name, after its leading colon for a pseudo-header, is a lowercase token.
    static func isValidFieldName(_ fieldName: String) -> Bool {
        if let valid = fieldName.utf8.withContiguousStorageIfAvailable(isValidFieldName(bytes:)) {
            return valid
        }
        return isValidFieldNameFallback(fieldName)
    }

    // MARK: contiguous bytes

    static func isValidPseudoHeaderValue(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        !bytes.containsAny(
            inWord: { hasByte($0, lessThan: 0x21) | hasByte($0, equalTo: 0x7F) },
            isForbidden: isForbiddenInPseudoHeaderValue
        )
    }

    static func isValidFieldValue(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        !bytes.containsAny(
            inWord: { hasByte($0, equalTo: 0x00) | hasByte($0, equalTo: 0x0A) | hasByte($0, equalTo: 0x0D) },
            isForbidden: isForbiddenInFieldValue
        )
    }

    static func isValidFieldName(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = bytes.startIndex
        if index < bytes.endIndex && bytes[index] == UInt8(ascii: ":") {
            index &+= 1
        }
        guard index < bytes.endIndex else {
            return false
        }
        while index < bytes.endIndex {
            guard isTokenCharacter(bytes[index]) else {
                return false
            }
            index &+= 1
        }
        return true
    }

    // MARK: fallback for strings without contiguous UTF-8

    static func isValidPseudoHeaderValueFallback(_ value: String) -> Bool {
        !value.utf8.contains(where: isForbiddenInPseudoHeaderValue)
    }

    static func isValidFieldValueFallback(_ value: String) -> Bool {
        !value.utf8.contains(where: isForbiddenInFieldValue)
    }

    static func isValidFieldNameFallback(_ fieldName: String) -> Bool {
        var bytes = Substring(fieldName).utf8[...]
        if bytes.first == UInt8(ascii: ":") {
            bytes = bytes.dropFirst()
        }
        return !bytes.isEmpty && bytes.allSatisfy(isTokenCharacter)
    }

    // MARK: the per-byte predicates, and their eight-bytes-at-a-time forms

    @inline(__always)
    static func isForbiddenInPseudoHeaderValue(_ byte: UInt8) -> Bool {
        byte <= 0x20 || byte == 0x7F
    }

    @inline(__always)
    static func isForbiddenInFieldValue(_ byte: UInt8) -> Bool {
        byte == 0x00 || byte == 0x0A || byte == 0x0D
    }

    /// The lowercase `tchar` set (%x21 / %x23-27 / %x2A / %x2B / %x2D / %x2E / %x30-39 / %x5E-7A /
    /// %x7C / %x7E) as a bit set: bytes 0x00-0x3F in the first word, 0x40-0x7F in the second.
    @inline(__always)
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        let low: UInt64 = 0x03FF_6CFA_0000_0000
        let high: UInt64 = 0x57FF_FFFF_C000_0000
        let word = byte < 0x40 ? low : (byte < 0x80 ? high : 0)
        return (word >> UInt64(byte & 0x3F)) & 1 == 1
    }

    /// Non-zero if and only if some byte of `word` equals `byte`.
    @inline(__always)
    static func hasByte(_ word: UInt64, equalTo byte: UInt8) -> UInt64 {
        hasByte(word ^ (0x0101_0101_0101_0101 &* UInt64(byte)), lessThan: 1)
    }

    /// Non-zero if and only if some byte of `word` is less than `bound` (which must be at most 0x80).
    @inline(__always)
    static func hasByte(_ word: UInt64, lessThan bound: UInt8) -> UInt64 {
        (word &- 0x0101_0101_0101_0101 &* UInt64(bound)) & ~word & 0x8080_8080_8080_8080
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether any byte is forbidden: eight bytes at a time while eight remain, then one by one.
    @inline(__always)
    fileprivate func containsAny(inWord: (UInt64) -> UInt64, isForbidden: (UInt8) -> Bool) -> Bool {
        guard let base = self.baseAddress else {
            return false
        }
        let raw = UnsafeRawPointer(base)
        var index = 0
        while index &+ 8 <= self.count {
            if inWord(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) != 0 {
                return true
            }
            index &+= 8
        }
        while index < self.count {
            if isForbidden(self[index]) {
                return true
            }
            index &+= 1
        }
        return false
    }
}
