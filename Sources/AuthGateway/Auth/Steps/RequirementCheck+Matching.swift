/// Whether a field's value satisfies its matcher (docs/policies.md, "Matchers"): for the value
/// itself or, when it is an array, a space-separated `scope`/`scp` string or a header sent on
/// several lines, for one of its elements. Allocates nothing.
extension RequirementCheck {
    static func matches(_ matcher: FieldMatcher, _ reading: FieldReading, asList: Bool) -> Bool {
        switch reading {
        case .absent:
            if case .exists(let wanted) = matcher { return !wanted }
            return false
        case .value(let value):
            return Self.matches(matcher, value, asList: asList)
        case .headerLines(let lines):
            return Self.matches(matcher, lines)
        }
    }

    private static func matches(_ matcher: FieldMatcher, _ value: JSONValue, asList: Bool) -> Bool {
        switch matcher {
        case .equals(let expected):
            return IdentityLookup.satisfies(value, expected: expected, asList: asList)
        case .oneOf(let candidates):
            for expected in candidates where IdentityLookup.satisfies(value, expected: expected, asList: asList) {
                return true
            }
            return false
        case .prefix(let prefix):
            return Self.anyText(of: value, asList: asList, .prefix(prefix))
        case .suffix(let suffix):
            return Self.anyText(of: value, asList: asList, .suffix(suffix))
        case .exists(let wanted):
            if case .null = value { return !wanted }
            return wanted
        case .cidr(let networks):
            guard case .string(let text) = value, let address = IPAddress(text) else { return false }
            for network in networks where network.contains(address) { return true }
            return false
        }
    }

    /// A request header: the fields that take one (the loader sees to it) hold for one line.
    private static func matches(_ matcher: FieldMatcher, _ lines: HeaderLines) -> Bool {
        switch matcher {
        case .equals(let expected):
            guard case .string(let wanted) = expected else { return false }
            for line in lines where line == wanted { return true }
            return false
        case .oneOf(let candidates):
            for line in lines {
                for case .string(let wanted) in candidates where line == wanted { return true }
            }
            return false
        case .prefix(let prefix):
            for line in lines where UTF8Affix.hasPrefix(line[...], prefix) { return true }
            return false
        case .suffix(let suffix):
            for line in lines where UTF8Affix.hasSuffix(line[...], suffix) { return true }
            return false
        case .exists(let wanted):
            return lines.isEmpty != wanted
        case .cidr:
            return false
        }
    }

    private enum TextTest {
        case prefix(String)
        case suffix(String)

        func holds(for text: Substring) -> Bool {
            switch self {
            case .prefix(let prefix): return UTF8Affix.hasPrefix(text, prefix)
            case .suffix(let suffix): return UTF8Affix.hasSuffix(text, suffix)
            }
        }
    }

    /// Whether `test` holds for a string value, a word of a list string, or a string element.
    private static func anyText(of value: JSONValue, asList: Bool, _ test: TextTest) -> Bool {
        switch value {
        case .string(let text):
            if test.holds(for: text[...]) { return true }
            if asList {
                for word in SpaceSeparatedWords(text) where test.holds(for: word) { return true }
            }
            return false
        case .array(let elements):
            for case .string(let text) in elements where test.holds(for: text[...]) { return true }
            return false
        case .null, .bool, .number, .object:
            return false
        }
    }
}

extension FieldTest {
    /// Whether the field's value satisfies the matcher. A method, so that the field and the
    /// matcher are read in place from `self` instead of copied out of the object per request
    /// (each copy retains what they hold: measured, docs/benchmarks.md).
    func holds(for fields: IdentityFields) -> Bool {
        RequirementCheck.matches(self.matcher, fields.reading(self.field), asList: self.field.readsAsList)
    }
}
