import Testing

@testable import AuthGateway

@Suite("IdentityLookup")
struct IdentityLookupTests {
    private let claims: JSONObject = try! JSONValue(
        parsing: #"""
            {
              "sub": "user-42",
              "https://example.com/roles": ["admin"],
              "realm_access": { "roles": ["orders-admin", "reader"], "nested": { "deep": 7 } },
              "a.b": "direct",
              "a": { "b": "walked" },
              "scope": "read write  admin",
              "n": 1
            }
            """#
    ).objectValue!

    @Test("a member whose name holds dots is found directly")
    func directMember() {
        #expect(IdentityLookup.value(named: "https://example.com/roles", in: claims) == ["admin"])
        // The direct member wins over a walk through nested objects.
        #expect(IdentityLookup.value(named: "a.b", in: claims) == "direct")
    }

    @Test("dot segments walk through nested objects")
    func nestedWalk() {
        #expect(IdentityLookup.value(named: "realm_access.roles", in: claims) == ["orders-admin", "reader"])
        #expect(IdentityLookup.value(named: "realm_access.nested.deep", in: claims) == 7)
        #expect(IdentityLookup.value(named: "realm_access.missing", in: claims) == nil)
        #expect(IdentityLookup.value(named: "sub.x", in: claims) == nil)
        #expect(IdentityLookup.value(named: "realm_access..roles", in: claims) == nil)
        #expect(IdentityLookup.value(named: "missing", in: claims) == nil)
    }

    @Test("requirements: equal values, or an array containing the value")
    func satisfies() {
        #expect(IdentityLookup.satisfies("user-42", expected: "user-42", name: "sub"))
        #expect(!IdentityLookup.satisfies("user-42", expected: "user-4", name: "sub"))
        #expect(IdentityLookup.satisfies(["a", "b"], expected: "b", name: "roles"))
        #expect(!IdentityLookup.satisfies(["a", "b"], expected: "c", name: "roles"))
        #expect(IdentityLookup.satisfies(["a", "b"], expected: ["a", "b"], name: "roles"))
        #expect(IdentityLookup.satisfies(true, expected: true, name: "super_admin"))
        #expect(!IdentityLookup.satisfies("true", expected: true, name: "super_admin"))
        #expect(!IdentityLookup.satisfies(1, expected: true, name: "super_admin"))
        #expect(!IdentityLookup.satisfies(nil, expected: .null, name: "x"))
        #expect(IdentityLookup.satisfies(.number(JSONNumber(text: "1.0", double: 1)), expected: 1, name: "n"))
    }

    @Test("requirements on 64-bit integer ids compare exactly, not as doubles")
    func largeIntegerRequirement() throws {
        // Snowflake-style ids (~1e18) are beyond 2^53: neighbouring ids share one Double.
        let actual = try JSONValue(parsing: "1234567890123456789")
        let expected = try JSONValue(parsing: "1234567890123456788")
        #expect(IdentityLookup.satisfies(actual, expected: actual, name: "org_id"))
        #expect(
            !IdentityLookup.satisfies(actual, expected: expected, name: "org_id"),
            "org 1234567890123456789 passes a requirement for org 1234567890123456788")
        #expect(!IdentityLookup.satisfies(.array([actual]), expected: expected, name: "org_ids"))
    }

    @Test("a space-separated scope string counts as a list, other strings do not")
    func scopeList() {
        #expect(IdentityLookup.satisfies("read write  admin", expected: "admin", name: "scope"))
        #expect(IdentityLookup.satisfies("read write", expected: "read", name: "scope"))
        #expect(!IdentityLookup.satisfies("read write", expected: "rea", name: "scope"))
        #expect(!IdentityLookup.satisfies("read write", expected: "read write admin", name: "scope"))
        #expect(!IdentityLookup.satisfies("read write", expected: "read", name: "roles"))
        // scp (RFC 9068) is read the same way.
        #expect(IdentityLookup.satisfies("orders:read orders:write", expected: "orders:write", name: "scp"))
        #expect(!IdentityLookup.satisfies("orders:read", expected: "orders", name: "scp"))
    }

    @Test("the lookup with segments cut beforehand finds what the lookup by name finds")
    func segmentLookup() {
        for name in [
            "sub", "a.b", "realm_access.roles", "realm_access.nested.deep", "realm_access..roles", "missing", "x.y",
        ] {
            let segments =
                name.contains(".") ? name.split(separator: ".", omittingEmptySubsequences: false).map(String.init) : []
            #expect(
                IdentityLookup.value(named: name, segments: segments, in: claims)
                    == IdentityLookup.value(named: name, in: claims),
                "\(name)")
        }
    }

    @Test("header text of each JSON type (docs/authentication.md)")
    func headerText() throws {
        #expect(IdentityLookup.headerText(for: "alice") == "alice")
        #expect(IdentityLookup.headerText(for: true) == "true")
        #expect(IdentityLookup.headerText(for: false) == "false")
        #expect(IdentityLookup.headerText(for: 42) == "42")
        #expect(IdentityLookup.headerText(for: try JSONValue(parsing: "1e3")) == "1e3")
        #expect(IdentityLookup.headerText(for: ["a", "b", 3, true]) == "a,b,3,true")
        #expect(IdentityLookup.headerText(for: ["a", ["b", "c"]]) == #"a,["b","c"]"#)
        #expect(IdentityLookup.headerText(for: ["k": "v"]) == #"{"k":"v"}"#)
        #expect(IdentityLookup.headerText(for: []) == "")
        #expect(IdentityLookup.headerText(for: .null) == nil)
        #expect(IdentityLookup.headerText(for: ["a", .null, "b"]) == "a,b")
    }

    @Test(
        "values that could split the header block are refused",
        arguments: ["a\r\nX-Admin: true", "a\nb", "a\rb", "a\u{0}b", "a\u{7F}"])
    func unsafeHeaderText(_ text: String) {
        #expect(IdentityLookup.headerText(for: .string(text)) == nil)
        // Inside an array or object the unsafe text must not come through either.
        for container: JSONValue in [["ok", .string(text)], ["k": .string(text)], [[.string(text)]]] {
            if let joined = IdentityLookup.headerText(for: container) {
                #expect(HTTPToken.isSafeHeaderValue(joined), "\(joined.debugDescription)")
            }
        }
    }

    @Test("tabs and non-ASCII text are allowed")
    func safeHeaderText() {
        #expect(IdentityLookup.headerText(for: "a\tb") == "a\tb")
        #expect(IdentityLookup.headerText(for: "Zo\u{EB}") == "Zo\u{EB}")
    }
}
