import Foundation
import Testing

import AuthGatewayTesting

@testable import AuthGateway

/// `browserSignIn` configurations that `check` (and start-up and reload) must refuse
/// (docs/browser-sign-in.md, "Configuration"), each with its JSON path and message.
@Suite("ConfigurationLoader: browserSignIn refusals")
struct ConfigurationLoaderBrowserSignInTests {
    static let issuer = "https://idp.example.com"

    /// The documented example, changed by `change`.
    static func document(_ change: (inout JSONObject) -> Void = { _ in }) -> JSONObject {
        var document: JSONObject = [
            "listener": ["port": 8080],
            "backends": ["web": ["urls": ["http://127.0.0.1:9100"]]],
            "tokens": [
                "issuers": [["issuer": .string(Self.issuer), "discovery": true, "audiences": ["internal-api"]]]
            ],
            "browserSignIn": [
                "issuer": .string(Self.issuer), "clientId": "gateway", "clientSecret": "s3cret",
                "clientAuthentication": "basic", "scopes": ["openid", "profile", "email", "offline_access"],
                "publicBaseURL": "https://app.example.com", "pathPrefix": "/.gateway/",
                "sessionIdleSeconds": 28800, "sessionMaxSeconds": 604800, "postSignOutPath": "/",
            ],
            "routes": [["name": "app", "pathPrefix": "/", "backend": "web", "auth": "required", "signIn": true]],
        ]
        change(&document)
        return document
    }

    static func removing(_ key: String) -> (inout JSONObject) -> Void {
        { document in
            var section = document["browserSignIn"]?.objectValue ?? JSONObject()
            section[key] = nil
            document["browserSignIn"] = .object(section)
        }
    }

    static func issues(_ document: JSONObject) -> [String] {
        do throws(ConfigurationError) {
            _ = try ConfigurationLoader(environment: [:]).load(
                text: JSONValue.object(document).jsonText, baseDirectory: "/nonexistent")
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    @Test func theDocumentedExampleLoads() {
        #expect(Self.issues(Self.document()) == [])
        for base in ["http://localhost:8080", "http://127.0.0.1", "http://127.255.0.9:80", "http://[::1]:8080"] {
            #expect(
                Self.issues(Self.document { $0.set("browserSignIn.publicBaseURL", .string(base)) }) == [], "\(base)")
        }
    }

    @Test func eachMistakeIsRefusedWithItsPathAndMessage() {
        let httpProblem = "is http on a host that is not loopback: browsers must reach sign-in over https"
        let onlyAuthority = "must be scheme and authority only (no path, query or trailing \"/\")"
        let prefixProblem = "browserSignIn.pathPrefix: must be a path that starts and ends with \"/\""
        let cases: [(String, (inout JSONObject) -> Void, String)] = [
            (
                "signIn without the section", { $0["browserSignIn"] = nil },
                "routes[0].signIn: needs a browserSignIn section"
            ),
            (
                "an issuer missing from tokens.issuers",
                { $0.set("browserSignIn.issuer", "https://other.example.com") },
                "browserSignIn.issuer: \"https://other.example.com\" is not an issuer of tokens.issuers"
            ),
            (
                "an issuer without discovery",
                {
                    $0["tokens"] = [
                        "issuers": [
                            [
                                "issuer": .string(Self.issuer), "jwksURL": "https://idp.example.com/jwks",
                                "audiences": ["internal-api"],
                            ]
                        ]
                    ]
                },
                "browserSignIn.issuer: issuer \"\(Self.issuer)\" does not have \"discovery\": true (tokens.issuers[0])"
            ),
            (
                "http on a public host", { $0.set("browserSignIn.publicBaseURL", "http://app.example.com") },
                "browserSignIn.publicBaseURL: \"http://app.example.com\" \(httpProblem)"
            ),
            (
                "http on a name that starts with 127.",
                { $0.set("browserSignIn.publicBaseURL", "http://127.evil.example") },
                "browserSignIn.publicBaseURL: \"http://127.evil.example\" \(httpProblem)"
            ),
            (
                "http on 127.0.0.1 as a name",
                { $0.set("browserSignIn.publicBaseURL", "http://127.0.0.1.evil.example") },
                "browserSignIn.publicBaseURL: \"http://127.0.0.1.evil.example\" \(httpProblem)"
            ),
            (
                "a path", { $0.set("browserSignIn.publicBaseURL", "https://app.example.com/app") },
                "browserSignIn.publicBaseURL: \"https://app.example.com/app\" \(onlyAuthority)"
            ),
            (
                "a trailing slash", { $0.set("browserSignIn.publicBaseURL", "https://app.example.com/") },
                "browserSignIn.publicBaseURL: \"https://app.example.com/\" \(onlyAuthority)"
            ),
            (
                "a user", { $0.set("browserSignIn.publicBaseURL", "https://user@app.example.com") },
                "browserSignIn.publicBaseURL: \"https://user@app.example.com\" is not an http(s) URL"
            ),
            (
                "not http(s)", { $0.set("browserSignIn.publicBaseURL", "ftp://app.example.com") },
                "browserSignIn.publicBaseURL: \"ftp://app.example.com\" is not an http(s) URL"
            ),
            ("a pathPrefix without a leading /", { $0.set("browserSignIn.pathPrefix", "gateway/") }, prefixProblem),
            ("a pathPrefix without a trailing /", { $0.set("browserSignIn.pathPrefix", "/gateway") }, prefixProblem),
            ("a pathPrefix with //", { $0.set("browserSignIn.pathPrefix", "//gateway/") }, prefixProblem),
            ("a pathPrefix with a query", { $0.set("browserSignIn.pathPrefix", "/g?x=/") }, prefixProblem),
            (
                "the pathPrefix /", { $0.set("browserSignIn.pathPrefix", "/") },
                "browserSignIn.pathPrefix: must not be \"/\": the sign-in endpoints would hide every route"
            ),
            (
                "scopes without openid", { $0.set("browserSignIn.scopes", ["profile", "email"]) },
                "browserSignIn.scopes: must contain \"openid\""
            ),
            ("no scopes", { $0.set("browserSignIn.scopes", []) }, "browserSignIn.scopes: must contain \"openid\""),
            (
                "a scope with a space", { $0.set("browserSignIn.scopes", ["openid profile"]) },
                "browserSignIn.scopes: must contain \"openid\""
            ),
            (
                "a scope with a quote", { $0.set("browserSignIn.scopes", ["openid", "a\"b"]) },
                "browserSignIn.scopes[1]: \"a\"b\" is not a valid scope (RFC 6749 §3.3)"
            ),
            (
                "idle longer than the maximum",
                {
                    $0.set("browserSignIn.sessionIdleSeconds", 7200)
                    $0.set("browserSignIn.sessionMaxSeconds", 3600)
                },
                "browserSignIn.sessionIdleSeconds: must not exceed sessionMaxSeconds (3600): the idle limit would never apply"
            ),
            (
                "a postSignOutPath on another site",
                { $0.set("browserSignIn.postSignOutPath", "https://evil.example/") },
                "browserSignIn.postSignOutPath: must be a path on publicBaseURL starting with \"/\""
            ),
            (
                "a protocol-relative postSignOutPath", { $0.set("browserSignIn.postSignOutPath", "//evil.example/") },
                "browserSignIn.postSignOutPath: must be a path on publicBaseURL starting with \"/\""
            ),
            ("no clientId", Self.removing("clientId"), "browserSignIn.clientId:"),
            ("no publicBaseURL", Self.removing("publicBaseURL"), "browserSignIn.publicBaseURL:"),
            ("no issuer", Self.removing("issuer"), "browserSignIn.issuer:"),
            (
                "an unknown clientAuthentication", { $0.set("browserSignIn.clientAuthentication", "jwt") },
                "browserSignIn.clientAuthentication:"
            ),
            (
                "an unknown member", { $0.set("browserSignIn.cookieDomain", "example.com") },
                "browserSignIn.cookieDomain:"
            ),
        ]
        for (name, change, expected) in cases {
            let issues = Self.issues(Self.document(change))
            #expect(
                issues.contains { $0 == expected || (expected.hasSuffix(":") && $0.hasPrefix(expected)) },
                "\(name): \(issues)")
        }
    }
}
