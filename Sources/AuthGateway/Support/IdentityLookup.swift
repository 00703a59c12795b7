/// Reads values out of verified claims and profiles for requirements, identity headers and
/// refresh templates, so the three agree on what `claims.<name>` means.
enum IdentityLookup {
    /// The value named `name`: first the member with exactly that name (claim names may hold
    /// dots, e.g. `https://example.com/roles`), else a walk through nested objects by dot
    /// segments (`realm_access.roles`).
    static func value(named name: String, in object: JSONObject) -> JSONValue? {
        if let direct = object[name] { return direct }
        guard name.contains(".") else { return nil }
        return Self.walk(name.split(separator: ".", omittingEmptySubsequences: false).map(String.init), in: object)
    }

    /// The same lookup with the dot segments cut beforehand (`IdentityValuePath.segments`,
    /// empty for a name without dots), so the request path allocates nothing.
    static func value(named name: String, segments: [String], in object: JSONObject) -> JSONValue? {
        if let direct = object[name] { return direct }
        guard !segments.isEmpty else { return nil }
        return Self.walk(segments, in: object)
    }

    private static func walk(_ segments: [String], in object: JSONObject) -> JSONValue? {
        var current: JSONValue = .object(object)
        for segment in segments {
            guard let next = current[segment] else { return nil }
            current = next
        }
        return current
    }

    /// Whether a string value named `name` also reads as a space-separated list: `scope`
    /// (RFC 8693 §4.2) and `scp` (RFC 9068 §2.2.3).
    static func readsAsList(_ name: String) -> Bool { name == "scope" || name == "scp" }

    /// Whether `actual` satisfies a requirement for `expected`: equal JSON values, or an array
    /// that contains `expected`. A space-separated `scope` or `scp` string also counts as a
    /// list.
    static func satisfies(_ actual: JSONValue?, expected: JSONValue, name: String) -> Bool {
        Self.satisfies(actual, expected: expected, asList: Self.readsAsList(name))
    }

    /// The same rule; `asList`: a string value is also a space-separated list. Allocates
    /// nothing.
    static func satisfies(_ actual: JSONValue?, expected: JSONValue, asList: Bool) -> Bool {
        guard let actual else { return false }
        if actual == expected { return true }
        if case .array(let elements) = actual {
            return elements.contains(expected)
        }
        if asList, case .string(let scopes) = actual, case .string(let wanted) = expected {
            for scope in SpaceSeparatedWords(scopes) where scope == wanted { return true }
        }
        return false
    }

    /// The text of a header carrying `value` (docs/authentication.md): strings without quotes,
    /// numbers and booleans as written, arrays joined with ",", objects as JSON; nil for null, and
    /// nil when the text could split the header block (CR, LF, NUL).
    static func headerText(for value: JSONValue) -> String? {
        let text: String
        switch value {
        case .null: return nil
        case .string(let string): text = string
        case .bool(let flag): text = flag ? "true" : "false"
        case .number(let number): text = number.text
        case .object: text = value.jsonText
        case .array(let elements):
            text = elements.compactMap { element -> String? in
                if case .array = element { return element.jsonText }
                return Self.headerText(for: element)
            }.joined(separator: ",")
        }
        return HTTPToken.isSafeHeaderValue(text) ? text : nil
    }
}
