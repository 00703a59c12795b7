import Testing

@testable import AuthGateway

@Suite("RefreshBodyTemplate")
struct RefreshBodyTemplateTests {
    private let claims: JSONObject = [
        "sub": "user-42", "email": "alice@example.com", "user_id": 1234, "admin": true,
        "roles": ["a", "b"], "org": ["id": "o-1"],
    ]

    private func render(
        _ template: JSONValue, refreshToken: String = "rt-1"
    ) throws(RefreshBodyTemplate.RenderError) -> JSONValue {
        try RefreshBodyTemplate.render(template, refreshToken: refreshToken, claims: claims)
    }

    @Test("placeholders are found in order")
    func placeholders() {
        #expect(RefreshBodyTemplate.placeholders(in: "{claims.email}") == ["claims.email"])
        #expect(
            RefreshBodyTemplate.placeholders(in: "Bearer {refreshToken} for {claims.sub}!") == [
                "refreshToken", "claims.sub",
            ])
        #expect(RefreshBodyTemplate.placeholders(in: "no placeholders") == [])
        #expect(RefreshBodyTemplate.placeholders(in: "unclosed {refreshToken") == [])
        #expect(RefreshBodyTemplate.placeholders(in: "{}") == [""])
    }

    @Test("the RainMaker body")
    func rainMaker() throws {
        let rendered = try render(["user_name": "{claims.email}", "refreshtoken": "{refreshToken}"])
        #expect(rendered.jsonText == #"{"user_name":"alice@example.com","refreshtoken":"rt-1"}"#)
    }

    @Test("a string that is exactly one placeholder takes the value's JSON type")
    func exactPlaceholderKeepsType() throws {
        let rendered = try render([
            "id": "{claims.user_id}", "admin": "{claims.admin}", "roles": "{claims.roles}", "org": "{claims.org}",
        ])
        #expect(rendered == ["id": 1234, "admin": true, "roles": ["a", "b"], "org": ["id": "o-1"]])
    }

    @Test("placeholders inside longer strings are replaced by the value's text")
    func embedded() throws {
        let rendered = try render([
            "s": "user {claims.sub} #{claims.user_id} {claims.roles} {claims.org.id} token={refreshToken}"
        ])
        #expect(rendered["s"] == "user user-42 #1234 a,b o-1 token=rt-1")
    }

    @Test("the refresh token is inserted verbatim, quotes and all, and escaped by the JSON writer")
    func refreshTokenEscaping() throws {
        let rendered = try render(["t": "{refreshToken}", "u": "x{refreshToken}"], refreshToken: "a\"b\\c")
        #expect(rendered["t"] == "a\"b\\c")
        #expect(rendered["u"] == "xa\"b\\c")
        #expect(try JSONValue(parsing: rendered.jsonText) == rendered)
    }

    @Test("a claim the expired token lacks is an error")
    func missingClaim() {
        #expect(throws: RefreshBodyTemplate.RenderError.missingClaim("phone")) { try render(["p": "{claims.phone}"]) }
        #expect(throws: RefreshBodyTemplate.RenderError.missingClaim("phone")) {
            try render(["p": "call {claims.phone}"])
        }
        #expect(throws: RefreshBodyTemplate.RenderError.missingClaim("org.name")) {
            try render(["nested": ["list": ["{claims.org.name}"]]])
        }
    }

    @Test("arrays, nested objects and non-string values are rendered or kept")
    func structure() throws {
        let template: JSONValue = ["a": ["{refreshToken}", 1, .null, false], "b": ["c": "{claims.sub}"], "n": 3]
        #expect(try render(template) == ["a": ["rt-1", 1, .null, false], "b": ["c": "user-42"], "n": 3])
        // Key order of the template is kept in the body.
        #expect(try render(["z": "1", "a": "2"]).jsonText == #"{"z":"1","a":"2"}"#)
    }

    @Test("text in braces that is not a placeholder is left alone")
    func unknownPlaceholderLeftAlone() throws {
        #expect(try render(["x": "{other}"]) == ["x": "{other}"])
        #expect(try render(["x": "a {other} b {refreshToken}"]) == ["x": "a {other} b rt-1"])
    }
}
