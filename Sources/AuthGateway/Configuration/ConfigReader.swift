/// Reads one JSON object of the configuration, key by key, recording problems with their path.
///
/// Every accessor marks its key as known; `finish()` then reports the keys nobody asked for, so
/// a typo such as `"pathPrefx"` is an error instead of a silently ignored setting. Strings get
/// `${NAME}` environment substitution here, in one place.
final class ConfigReader {
    /// The JSON path of this object; for an element of an array, the array's path, with
    /// `element` its index (the text is made only when a path is needed: a keys file may hand
    /// a million elements over).
    private let basePath: String
    private let element: Int?
    var path: String { self.element.map { "\(self.basePath)[\($0)]" } ?? self.basePath }
    private let object: JSONObject
    /// Shared by every reader of one load; sub-parsers (requirements) record here too.
    let issues: IssueCollector
    private let environment: [String: String]
    /// Which of `object`'s entries an accessor asked for, by position: one bit each for the
    /// first 64 (every object a configuration has), a set beyond. No allocation per reader, which
    /// a keys file of a million entries feels (docs/policies.md, "API keys").
    private var knownMask: UInt64 = 0
    private var knownBeyond: Set<Int> = []

    init(
        object: JSONObject, path: String, element: Int? = nil, issues: IssueCollector, environment: [String: String]
    ) {
        self.object = object
        self.basePath = path
        self.element = element
        self.issues = issues
        self.environment = environment
    }

    func childPath(_ key: String) -> String {
        let path = self.path
        return path.isEmpty ? key : "\(path).\(key)"
    }

    func error(_ key: String, _ message: String) { self.issues.add(self.childPath(key), message) }

    func error(_ message: String) { self.issues.add(self.path, message) }

    func has(_ key: String) -> Bool { self.object[key] != nil }

    /// The raw value of `key`, marking the key as known.
    func value(_ key: String) -> JSONValue? {
        guard let index = self.object.index(forKey: key) else { return nil }
        if index < 64 { self.knownMask |= 1 << UInt64(index) } else { self.knownBeyond.insert(index) }
        return self.object.entries[index].value
    }

    /// Reports every key that no accessor asked for.
    func finish() {
        for index in self.object.entries.indices {
            let known = index < 64 ? self.knownMask & (1 << UInt64(index)) != 0 : self.knownBeyond.contains(index)
            if !known { self.issues.add(self.childPath(self.object.entries[index].key), "unknown key") }
        }
    }

    // MARK: Typed accessors. Each returns nil when the key is absent or invalid (after recording why).

    func string(_ key: String) -> String? {
        guard let value = self.value(key) else { return nil }
        guard case .string(let raw) = value else {
            self.error(key, "expected a string, found \(value.typeName)")
            return nil
        }
        return self.substitute(raw, path: self.childPath(key))
    }

    func nonEmptyString(_ key: String) -> String? {
        guard let value = self.string(key) else { return nil }
        if value.isEmpty {
            self.error(key, "must not be empty")
            return nil
        }
        return value
    }

    func requiredString(_ key: String) -> String? {
        guard self.has(key) else {
            self.error(key, "is required")
            return nil
        }
        return self.nonEmptyString(key)
    }

    func bool(_ key: String) -> Bool? {
        guard let value = self.value(key) else { return nil }
        guard case .bool(let flag) = value else {
            self.error(key, "expected true or false, found \(value.typeName)")
            return nil
        }
        return flag
    }

    /// A whole number within `range`.
    func int(_ key: String, in range: ClosedRange<Int>) -> Int? {
        guard let value = self.value(key) else { return nil }
        guard case .number(let number) = value, let integer = number.exactInt else {
            self.error(
                key, "expected a whole number, found \(value.typeName == "number" ? value.jsonText : value.typeName)")
            return nil
        }
        guard range.contains(integer) else {
            if range.upperBound == Int.max {
                self.error(key, "must be at least \(range.lowerBound), found \(integer)")
            } else {
                self.error(key, "must be between \(range.lowerBound) and \(range.upperBound), found \(integer)")
            }
            return nil
        }
        return integer
    }

    /// A number (whole or not) within `range`.
    func number(_ key: String, in range: ClosedRange<Double>) -> Double? {
        guard let value = self.value(key) else { return nil }
        guard case .number(let number) = value else {
            self.error(key, "expected a number, found \(value.typeName)")
            return nil
        }
        guard range.contains(number.double) else {
            self.error(key, "must be between \(range.lowerBound) and \(range.upperBound), found \(number.text)")
            return nil
        }
        return number.double
    }

    /// A duration key: docs/configuration.md — whole numbers, `leewaySeconds` ≥ 0, every other ≥ 1.
    func duration(_ key: String, minimum: Int = 1) -> Int? {
        self.int(key, in: minimum...Int(Int32.max))
    }

    func stringArray(_ key: String) -> [String]? {
        guard let value = self.value(key) else { return nil }
        guard case .array(let elements) = value else {
            self.error(key, "expected an array of strings, found \(value.typeName)")
            return nil
        }
        var result: [String] = []
        var valid = true
        for (index, element) in elements.enumerated() {
            let elementPath = "\(self.childPath(key))[\(index)]"
            guard case .string(let raw) = element else {
                self.issues.add(elementPath, "expected a string, found \(element.typeName)")
                valid = false
                continue
            }
            guard let substituted = self.substitute(raw, path: elementPath) else {
                valid = false
                continue
            }
            result.append(substituted)
        }
        return valid ? result : nil
    }

    func object(_ key: String) -> ConfigReader? {
        guard let value = self.value(key) else { return nil }
        guard case .object(let object) = value else {
            self.error(key, "expected an object, found \(value.typeName)")
            return nil
        }
        return ConfigReader(
            object: object, path: self.childPath(key), issues: self.issues, environment: self.environment)
    }

    /// The elements of an array of objects, each as a reader with its indexed path.
    func objectArray(_ key: String) -> [ConfigReader]? {
        guard let value = self.value(key) else { return nil }
        guard case .array(let elements) = value else {
            self.error(key, "expected an array, found \(value.typeName)")
            return nil
        }
        var readers: [ConfigReader] = []
        for (index, element) in elements.enumerated() {
            let elementPath = "\(self.childPath(key))[\(index)]"
            guard case .object(let object) = element else {
                self.issues.add(elementPath, "expected an object, found \(element.typeName)")
                continue
            }
            readers.append(
                ConfigReader(object: object, path: elementPath, issues: self.issues, environment: self.environment))
        }
        return readers
    }

    /// The members of an object whose keys are names chosen by the operator (backends,
    /// identity headers), in file order.
    func members(_ key: String) -> [(name: String, path: String, value: JSONValue)]? {
        guard let value = self.value(key) else { return nil }
        guard case .object(let object) = value else {
            self.error(key, "expected an object, found \(value.typeName)")
            return nil
        }
        return object.entries.map { (name: $0.key, path: "\(self.childPath(key)).\($0.key)", value: $0.value) }
    }

    /// `value` as a reader whose path is `path`, or `path[element]` for an array's element.
    func reader(for value: JSONValue, path: String, element: Int? = nil) -> ConfigReader? {
        guard case .object(let object) = value else {
            self.issues.add(element.map { "\(path)[\($0)]" } ?? path, "expected an object, found \(value.typeName)")
            return nil
        }
        return ConfigReader(
            object: object, path: path, element: element, issues: self.issues, environment: self.environment)
    }

    /// Applies `${NAME}` substitution to every string inside `value` (used for JSON templates).
    func substituteAll(in value: JSONValue, path: String) -> JSONValue? {
        switch value {
        case .string(let raw):
            return self.substitute(raw, path: path).map(JSONValue.string)
        case .array(let elements):
            var result: [JSONValue] = []
            for (index, element) in elements.enumerated() {
                guard let substituted = self.substituteAll(in: element, path: "\(path)[\(index)]") else { return nil }
                result.append(substituted)
            }
            return .array(result)
        case .object(let object):
            var result = JSONObject()
            for entry in object.entries {
                guard let substituted = self.substituteAll(in: entry.value, path: "\(path).\(entry.key)") else {
                    return nil
                }
                result[entry.key] = substituted
            }
            return .object(result)
        case .null, .bool, .number:
            return value
        }
    }

    /// Whether `raw` holds `${`, by its bytes (Foundation's `contains` was a tenth of loading a
    /// large keys file).
    private static func mentionsVariable(_ raw: String) -> Bool {
        var raw = raw
        return raw.withUTF8 { bytes in
            guard bytes.count >= 2 else { return false }
            for index in 0..<(bytes.count - 1) where bytes[index] == UInt8(ascii: "$") {
                if bytes[index + 1] == UInt8(ascii: "{") { return true }
            }
            return false
        }
    }

    /// Replaces each `${NAME}` with the environment variable NAME; a missing variable is an error.
    /// `path` is built only for an error: most strings have nothing to substitute.
    func substitute(_ raw: String, path: @autoclosure () -> String) -> String? {
        guard Self.mentionsVariable(raw) else { return raw }
        let path = path()
        var output = ""
        var rest = raw[...]
        while let start = rest.range(of: "${") {
            output += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                self.issues.add(path, "unterminated \"${\" in string")
                return nil
            }
            let name = String(rest[start.upperBound..<end])
            guard !name.isEmpty, name.allSatisfy({ $0 == "_" || $0.isLetter || $0.isNumber }) else {
                self.issues.add(path, "invalid environment variable name \"\(name)\"")
                return nil
            }
            guard let value = self.environment[name] else {
                self.issues.add(path, "environment variable \(name) is not set")
                return nil
            }
            output += value
            rest = rest[rest.index(after: end)...]
        }
        output += rest
        return output
    }
}
