/// Reading a `require` value (docs/policies.md) into a `Requirement`, every problem recorded
/// with its JSON path: unknown fields and operators, empty `anyOf`/`allOf`, a `not` of a
/// non-object, a matcher on the wrong kind of field.
extension Requirement {
    /// The same reading the configuration loader does, for tools and tests: the requirement,
    /// or every problem at once.
    public init(parsing value: JSONValue, path: String = "require") throws(ConfigurationError) {
        let issues = IssueCollector()
        let parsed = RequirementParser(issues: issues).requirement(value, path: path, nested: false)
        guard let parsed, issues.issues.isEmpty else {
            throw ConfigurationError(
                issues: issues.issues.isEmpty ? [.init(path: path, message: "invalid")] : issues.issues)
        }
        self = parsed
    }
}

/// The JSON paths requirement problems and refusals are named by: `.key` for a key that is a
/// plain identifier (`anyOf`, `sub`), `["key"]` otherwise (`["claims.groups"]`).
enum RequirementPath {
    static func member(_ base: String, _ key: String) -> String {
        if let first = key.utf8.first, !Self.isDigit(first),
            key.utf8.allSatisfy({ Self.isDigit($0) || $0 == UInt8(ascii: "_") || Self.isLetter($0) })
        {
            return "\(base).\(key)"
        }
        return "\(base)[\(JSONValue.string(key).jsonText)]"
    }

    static func element(_ base: String, _ index: Int) -> String { "\(base)[\(index)]" }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }
}

struct RequirementParser {
    let issues: IssueCollector

    static let fieldKeys =
        "keys must be \"anyOf\", \"allOf\", \"not\" or a field: \"claims.<name>\", \"profile.<name>\", \"dpop.jkt\", "
        + "\"request.method\", \"request.host\", \"request.path\", \"request.header.<name>\" or \"client.ip\""
    static let operators = "in, prefix, suffix, exists, cidr or equals"

    /// An object of clauses; `nested`: inside a combinator, where an empty object is a mistake
    /// (at the top, `{}` is a route without requirements, as it always was).
    func requirement(_ value: JSONValue, path: String, nested: Bool) -> Requirement? {
        guard case .object(let object) = value else {
            self.issues.add(path, "expected a requirement (an object), found \(value.typeName)")
            return nil
        }
        if nested && object.isEmpty {
            self.issues.add(path, "an empty requirement always holds: give it a clause or leave it out")
            return nil
        }
        var clauses: [RequirementClause] = []
        var valid = true
        for entry in object.entries {
            if let clause = self.clause(entry.key, entry.value, path: RequirementPath.member(path, entry.key)) {
                clauses.append(clause)
            } else {
                valid = false
            }
        }
        return valid ? Requirement(path: path, clauses: clauses) : nil
    }

    private func clause(_ key: String, _ value: JSONValue, path: String) -> RequirementClause? {
        switch key {
        case "anyOf", "allOf":
            guard case .array(let elements) = value else {
                self.issues.add(path, "expected an array of requirements, found \(value.typeName)")
                return nil
            }
            guard !elements.isEmpty else {
                self.issues.add(path, "must list at least one requirement")
                return nil
            }
            var requirements: [Requirement] = []
            for (index, element) in elements.enumerated() {
                if let requirement = self.requirement(element, path: RequirementPath.element(path, index), nested: true)
                {
                    requirements.append(requirement)
                }
            }
            guard requirements.count == elements.count else { return nil }
            return RequirementClause(path: path, kind: key == "anyOf" ? .anyOf(requirements) : .allOf(requirements))
        case "not":
            guard let requirement = self.requirement(value, path: path, nested: true) else { return nil }
            return RequirementClause(path: path, kind: .not(requirement))
        default:
            guard let field = IdentityValuePath(parsing: key) else {
                self.issues.add(path, Self.fieldKeys)
                return nil
            }
            guard let matcher = self.matcher(value, field: field, path: path) else { return nil }
            return RequirementClause(path: path, kind: .field(field, matcher))
        }
    }

    /// A JSON value (equality) or an object with exactly one operator.
    private func matcher(_ value: JSONValue, field: IdentityValuePath, path: String) -> FieldMatcher? {
        guard case .object(let object) = value else { return self.equality(value, field: field, path: path) }
        guard object.entries.count == 1, let (name, argument) = object.entries.first else {
            self.issues.add(
                path,
                "a matcher object takes exactly one operator (\(Self.operators)); to require an object value, "
                    + "write {\"equals\": {…}}")
            return nil
        }
        let operatorPath = RequirementPath.member(path, name)
        switch name {
        case "equals":
            return self.equality(argument, field: field, path: operatorPath)
        case "in":
            guard case .array(let values) = argument else {
                self.issues.add(operatorPath, "expected an array of values, found \(argument.typeName)")
                return nil
            }
            guard !values.isEmpty else {
                self.issues.add(operatorPath, "must list at least one value")
                return nil
            }
            // client.ip's addresses become networks of one (`equality`); the rest stay values.
            var expected: [JSONValue] = []
            var networks: [CIDR] = []
            var valid = true
            for (index, element) in values.enumerated() {
                switch self.equality(element, field: field, path: RequirementPath.element(operatorPath, index)) {
                case .equals(let value): expected.append(value)
                case .cidr(let addresses): networks += addresses
                case .oneOf, .prefix, .suffix, .exists, nil: valid = false
                }
            }
            guard valid else { return nil }
            return field == .clientIP ? .cidr(networks) : .oneOf(expected)
        case "prefix", "suffix":
            guard case .string(let text) = argument else {
                self.issues.add(operatorPath, "expected a string, found \(argument.typeName)")
                return nil
            }
            guard !text.isEmpty else {
                self.issues.add(operatorPath, "must not be empty (it would match every string)")
                return nil
            }
            return name == "prefix" ? .prefix(text) : .suffix(text)
        case "exists":
            guard case .bool(let wanted) = argument else {
                self.issues.add(operatorPath, "expected true or false, found \(argument.typeName)")
                return nil
            }
            return .exists(wanted)
        case "cidr":
            guard field == .clientIP else {
                self.issues.add(operatorPath, "applies only to client.ip, not to \(field)")
                return nil
            }
            guard case .array(let elements) = argument, !elements.isEmpty else {
                self.issues.add(operatorPath, "expected a non-empty array of networks such as \"10.0.0.0/8\"")
                return nil
            }
            var networks: [CIDR] = []
            for (index, element) in elements.enumerated() {
                if case .string(let text) = element, let network = CIDR(parsing: text) {
                    networks.append(network)
                } else {
                    self.issues.add(
                        RequirementPath.element(operatorPath, index),
                        "\(element.jsonText) is not an IP address or network such as \"10.0.0.0/8\"")
                }
            }
            return networks.count == elements.count ? .cidr(networks) : nil
        default:
            self.issues.add(operatorPath, "unknown operator \"\(name)\"; expected \(Self.operators)")
            return nil
        }
    }

    /// Equality with `value`. `claims.*`, `profile.*` and `dpop.jkt` take any JSON value, as
    /// they always did; the request's fields are strings, so they take strings: a method
    /// (upper-cased, as a route's `methods` are), a header's text, an IP address.
    private func equality(_ value: JSONValue, field: IdentityValuePath, path: String) -> FieldMatcher? {
        switch field.source {
        case .claims, .profile, .dpop:
            return .equals(value)
        case .client, .request:
            guard case .string(let text) = value else {
                self.issues.add(path, "\(field) is a string: expected a string, found \(value.typeName)")
                return nil
            }
            if field == .clientIP {
                guard IPAddress(text) != nil, let address = CIDR(parsing: text) else {
                    self.issues.add(path, "\(value.jsonText) is not an IP address (a network needs {\"cidr\": […]})")
                    return nil
                }
                return .cidr([address])
            }
            if field == .requestMethod {
                guard HTTPToken.isValid(text) else {
                    self.issues.add(path, "\(value.jsonText) is not a valid method")
                    return nil
                }
                return .equals(.string(text.uppercased()))
            }
            if field.name == "host" || field.requestHeaderName.map({ ASCII.equalsIgnoringCase($0, "host") }) == true {
                // The host rules read is canonical: lower-cased, without a trailing dot.
                var host = text.lowercased()
                if host.hasSuffix(".") { host.removeLast() }
                return .equals(.string(host))
            }
            return .equals(value)
        }
    }
}
