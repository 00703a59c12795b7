/// The `jsonBody` of a `json` refresh: a JSON template whose strings may hold `{refreshToken}`
/// and `{claims.<name>}` placeholders (docs/authentication.md).
///
/// A string that is exactly one placeholder takes the value's JSON type (a numeric claim stays a
/// number); placeholders inside longer strings are replaced by the value's text.
enum RefreshBodyTemplate {
    /// The placeholder names in `text`, e.g. `["claims.email", "refreshToken"]`.
    static func placeholders(in text: String) -> [String] {
        var names: [String] = []
        var rest = text[...]
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    enum RenderError: Error, Equatable {
        /// The expired token lacks a claim the template needs.
        case missingClaim(String)
    }

    static func render(_ template: JSONValue, refreshToken: String, claims: JSONObject) throws(RenderError) -> JSONValue
    {
        switch template {
        case .string(let text):
            return try Self.renderString(text, refreshToken: refreshToken, claims: claims)
        case .array(let elements):
            var rendered: [JSONValue] = []
            for element in elements {
                rendered.append(try Self.render(element, refreshToken: refreshToken, claims: claims))
            }
            return .array(rendered)
        case .object(let object):
            var rendered = JSONObject()
            for entry in object.entries {
                rendered[entry.key] = try Self.render(entry.value, refreshToken: refreshToken, claims: claims)
            }
            return .object(rendered)
        case .null, .bool, .number:
            return template
        }
    }

    private static func value(
        of name: String, refreshToken: String, claims: JSONObject
    ) throws(RenderError) -> JSONValue? {
        if name == "refreshToken" { return .string(refreshToken) }
        guard name.hasPrefix("claims.") else { return nil }
        let claim = String(name.dropFirst("claims.".count))
        guard let value = IdentityLookup.value(named: claim, in: claims) else { throw .missingClaim(claim) }
        return value
    }

    private static func renderString(
        _ text: String, refreshToken: String, claims: JSONObject
    ) throws(RenderError) -> JSONValue {
        let names = Self.placeholders(in: text)
        if names.count == 1, text == "{\(names[0])}",
            let value = try Self.value(of: names[0], refreshToken: refreshToken, claims: claims)
        {
            return value
        }
        var output = ""
        var rest = text[...]
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            output += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            if let value = try Self.value(of: name, refreshToken: refreshToken, claims: claims) {
                output += IdentityLookup.headerText(for: value) ?? value.jsonText
            } else {
                output += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        output += rest
        return .string(output)
    }
}
