/// A parsed JSON document.
///
/// The gateway parses JSON from untrusted places (token headers and payloads, JWKS documents,
/// auth-service replies) and from its own configuration file. One strict parser serves all of
/// them: RFC 8259 grammar, valid UTF-8 only, bounded nesting, and — because an ambiguous
/// document is an attack surface (`{"alg":"none","alg":"RS256"}`) — duplicate object keys are
/// an error. Objects keep their key order, which the configuration relies on for
/// `identityHeaders` and error messages.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

/// A JSON number that remembers its literal text, so `42` is written back as `42`, not `42.0`,
/// and large integer ids survive unchanged.
public struct JSONNumber: Sendable, Equatable {
    public let text: String
    public let double: Double

    public init(text: String, double: Double) {
        self.text = text
        self.double = double
    }

    public init(_ value: Int) {
        self.text = String(value)
        self.double = Double(value)
    }

    /// The value as an integer when it is one exactly (`3`, `3.0`, `3e0`).
    public var exactInt: Int? {
        guard self.double.rounded() == self.double, abs(self.double) < 9.0e15 else { return nil }
        return Int(self.double)
    }

    /// Numbers are equal when their values are: `1000` equals `1e3`. Integers beyond 2^53,
    /// which doubles cannot tell apart (64-bit ids), compare by their digits.
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        if lhs.isIntegerLiteral && rhs.isIntegerLiteral && (abs(lhs.double) >= 9.0e15 || abs(rhs.double) >= 9.0e15) {
            return lhs.text == rhs.text
        }
        return lhs.double == rhs.double
    }

    /// Written as an integer (`-?[0-9]+`), whose digits are canonical in JSON (no leading zeros).
    private var isIntegerLiteral: Bool {
        !self.text.contains { $0 == "." || $0 == "e" || $0 == "E" }
    }
}

/// A JSON object: ordered, duplicate-free key/value pairs.
public struct JSONObject: Sendable, Equatable {
    public private(set) var entries: [(key: String, value: JSONValue)]

    public init() { self.entries = [] }

    public init(_ entries: [(String, JSONValue)]) {
        self.entries = entries.map { (key: $0.0, value: $0.1) }
    }

    /// Entries already known to be duplicate-free (the parser checks).
    init(uniqueEntries: [(key: String, value: JSONValue)]) {
        self.entries = uniqueEntries
    }

    public subscript(key: String) -> JSONValue? {
        get {
            // By index: comparing `entries[i].key` in place copies no entry (no retain of
            // each value on the way); requirements and identity headers look up per request.
            self.index(forKey: key).map { self.entries[$0].value }
        }
        set {
            if let index = self.entries.firstIndex(where: { $0.key == key }) {
                if let newValue { self.entries[index].value = newValue } else { self.entries.remove(at: index) }
            } else if let newValue {
                self.entries.append((key: key, value: newValue))
            }
        }
    }

    /// The position of `key` among `entries`, or nil.
    public func index(forKey key: String) -> Int? {
        for index in self.entries.indices where self.entries[index].key == key { return index }
        return nil
    }

    public var keys: [String] { self.entries.map(\.key) }
    public var isEmpty: Bool { self.entries.isEmpty }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.entries.count == rhs.entries.count else { return false }
        for entry in lhs.entries where rhs[entry.key] != entry.value { return false }
        return true
    }
}

extension JSONValue {
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var numberValue: JSONNumber? {
        if case .number(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    public subscript(key: String) -> JSONValue? {
        self.objectValue?[key]
    }
}

// MARK: - Writing

extension JSONValue {
    /// Compact JSON text.
    public var jsonText: String {
        var output = ""
        self.write(to: &output)
        return output
    }

    public func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .number(let value): output += value.text
        case .string(let value): JSONValue.writeString(value, to: &output)
        case .array(let values):
            output += "["
            for (index, value) in values.enumerated() {
                if index > 0 { output += "," }
                value.write(to: &output)
            }
            output += "]"
        case .object(let object):
            output += "{"
            for (index, entry) in object.entries.enumerated() {
                if index > 0 { output += "," }
                JSONValue.writeString(entry.key, to: &output)
                output += ":"
                entry.value.write(to: &output)
            }
            output += "}"
        }
    }

    public static func writeString(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(elements) }
}
