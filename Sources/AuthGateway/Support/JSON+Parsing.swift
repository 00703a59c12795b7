// MARK: - Parsing

/// Why a JSON text was refused, with the byte offset where parsing stopped.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public let offset: Int

    public var description: String { "\(self.message) at byte \(self.offset)" }
}

extension JSONValue {
    /// The deepest nesting a document may have; deeper input is refused instead of
    /// recursing without bound on attacker-controlled bytes.
    public static let maximumDepth = 64

    public init(parsing text: String) throws(JSONParseError) {
        var text = text
        self = try text.withUTF8 { bytes in Self.parseResult(UnsafeRawBufferPointer(bytes)) }.get()
    }

    public init<Bytes: Collection<UInt8>>(parsingBytes bytes: Bytes) throws(JSONParseError) {
        if let result = bytes.withContiguousStorageIfAvailable({ Self.parseResult(UnsafeRawBufferPointer($0)) }) {
            self = try result.get()
        } else {
            self = try Array(bytes).withUnsafeBytes { Self.parseResult($0) }.get()
        }
    }

    private static func parseResult(_ bytes: UnsafeRawBufferPointer) -> Result<JSONValue, JSONParseError> {
        do throws(JSONParseError) {
            return .success(try JSONValue(parsing: bytes))
        } catch {
            return .failure(error)
        }
    }

    public init(parsing bytes: UnsafeRawBufferPointer) throws(JSONParseError) {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw parser.error("unexpected data after the JSON value")
        }
        self = value
    }
}

extension JSONValue {
    /// Hands each element of a top-level array to `body` as it is parsed, so only one element's
    /// tree is alive at a time: a keys file of a million entries (docs/policies.md, "API keys")
    /// never becomes one document in memory. False, with nothing handed over, when the text is
    /// not an array (parse it whole to say what it is). The grammar is `init(parsing:)`'s.
    public static func forEachElement(
        ofArrayIn bytes: UnsafeRawBufferPointer, _ body: (_ index: Int, _ element: JSONValue) -> Void
    ) throws(JSONParseError) -> Bool {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        guard parser.current == UInt8(ascii: "[") else { return false }
        parser.index += 1
        parser.skipWhitespace()
        var count = 0
        if parser.current == UInt8(ascii: "]") {
            parser.index += 1
        } else {
            elements: while true {
                parser.skipWhitespace()
                body(count, try parser.parseValue(depth: 1))
                count += 1
                parser.skipWhitespace()
                switch parser.current {
                case UInt8(ascii: ","): parser.index += 1
                case UInt8(ascii: "]"):
                    parser.index += 1
                    break elements
                default: throw parser.error("expected ',' or ']'")
                }
            }
        }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return true
    }
}

private struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    func error(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: self.index) }

    var current: UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    mutating func skipWhitespace() {
        while let byte = self.current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            self.index += 1
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw self.error("JSON nested too deeply") }
        guard let byte = self.current else { throw self.error("unexpected end of JSON") }
        switch byte {
        case UInt8(ascii: "{"): return try self.parseObject(depth: depth)
        case UInt8(ascii: "["): return try self.parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try self.parseString())
        case UInt8(ascii: "t"): try self.expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try self.expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try self.expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try self.parseNumber())
        default: throw self.error("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard self.index + count <= self.bytes.count else { throw self.error("unexpected end of JSON") }
        for offset in 0..<count where self.bytes[self.index + offset] != literal.utf8Start[offset] {
            throw self.error("invalid literal")
        }
        self.index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        self.index += 1  // {
        var entries: [(key: String, value: JSONValue)] = []
        // Small objects (every token and config object) check duplicates by a linear scan; a
        // large hostile one switches to a set so the check stays linear in the input size.
        var seenKeys: Set<String>? = nil
        self.skipWhitespace()
        if self.current == UInt8(ascii: "}") {
            self.index += 1
            return .object(JSONObject())
        }
        while true {
            self.skipWhitespace()
            guard self.current == UInt8(ascii: "\"") else { throw self.error("expected a string key") }
            let keyOffset = self.index
            let key = try self.parseString()
            let isDuplicate: Bool
            if seenKeys != nil {
                isDuplicate = !seenKeys!.insert(key).inserted
            } else {
                isDuplicate = entries.contains(where: { $0.key == key })
                if entries.count == 16 { seenKeys = Set(entries.map(\.key) + [key]) }
            }
            if isDuplicate {
                throw JSONParseError(message: "duplicate key \"\(key)\"", offset: keyOffset)
            }
            self.skipWhitespace()
            guard self.current == UInt8(ascii: ":") else { throw self.error("expected ':'") }
            self.index += 1
            self.skipWhitespace()
            let value = try self.parseValue(depth: depth + 1)
            entries.append((key: key, value: value))
            self.skipWhitespace()
            switch self.current {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "}"):
                self.index += 1
                return .object(JSONObject(uniqueEntries: entries))
            default: throw self.error("expected ',' or '}'")
            }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        self.index += 1  // [
        var values: [JSONValue] = []
        self.skipWhitespace()
        if self.current == UInt8(ascii: "]") {
            self.index += 1
            return .array(values)
        }
        while true {
            self.skipWhitespace()
            values.append(try self.parseValue(depth: depth + 1))
            self.skipWhitespace()
            switch self.current {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "]"):
                self.index += 1
                return .array(values)
            default: throw self.error("expected ',' or ']'")
            }
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = self.index
        if self.current == UInt8(ascii: "-") { self.index += 1 }
        guard let first = self.current, isDigit(first) else { throw self.error("invalid number") }
        if first == UInt8(ascii: "0") {
            self.index += 1
            if let next = self.current, isDigit(next) { throw self.error("leading zero in number") }
        } else {
            while let byte = self.current, isDigit(byte) { self.index += 1 }
        }
        if self.current == UInt8(ascii: ".") {
            self.index += 1
            guard let byte = self.current, isDigit(byte) else { throw self.error("invalid fraction") }
            while let byte = self.current, isDigit(byte) { self.index += 1 }
        }
        if self.current == UInt8(ascii: "e") || self.current == UInt8(ascii: "E") {
            self.index += 1
            if self.current == UInt8(ascii: "+") || self.current == UInt8(ascii: "-") { self.index += 1 }
            guard let byte = self.current, isDigit(byte) else { throw self.error("invalid exponent") }
            while let byte = self.current, isDigit(byte) { self.index += 1 }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: self.bytes[start..<self.index]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            throw JSONParseError(message: "number out of range", offset: start)
        }
        return JSONNumber(text: text, double: double)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        self.index += 1  // opening quote
        let start = self.index
        // Fast path: no escapes.
        var ascii = true
        while let byte = self.current {
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: self.bytes[start..<self.index])
                // ASCII is valid UTF-8: no validation (measured: the generic validating
                // initializer cost ~1 % of a request that verifies a token).
                let validated =
                    ascii ? String(decoding: slice, as: UTF8.self) : String(validating: slice, as: UTF8.self)
                guard let string = validated else {
                    throw JSONParseError(message: "invalid UTF-8 in string", offset: start)
                }
                self.index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw self.error("control character in string") }
            if byte >= 0x80 { ascii = false }
            self.index += 1
        }
        guard self.current != nil else { throw self.error("unterminated string") }
        // Slow path: decode escapes into a byte buffer.
        var utf8 = Array(UnsafeRawBufferPointer(rebasing: self.bytes[start..<self.index]))
        while let byte = self.current {
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw JSONParseError(message: "invalid UTF-8 in string", offset: start)
                }
                self.index += 1
                return string
            case UInt8(ascii: "\\"):
                self.index += 1
                guard let escape = self.current else { throw self.error("unterminated escape") }
                self.index += 1
                switch escape {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try self.parseHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard self.current == UInt8(ascii: "\\") else { throw self.error("unpaired surrogate") }
                        self.index += 1
                        guard self.current == UInt8(ascii: "u") else { throw self.error("unpaired surrogate") }
                        self.index += 1
                        let low = try self.parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw self.error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw self.error("unpaired surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw self.error("invalid unicode escape") }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw self.error("invalid escape")
                }
            default:
                if byte < 0x20 { throw self.error("control character in string") }
                utf8.append(byte)
                self.index += 1
            }
        }
        throw self.error("unterminated string")
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard self.index + 4 <= self.bytes.count else { throw self.error("invalid unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw self.error("invalid unicode escape")
            }
            value = value << 4 | digit
            self.index += 1
        }
        return value
    }
}

@inline(__always)
private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
