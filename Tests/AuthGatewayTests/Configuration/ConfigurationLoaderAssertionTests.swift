import Crypto
import Foundation
import Testing
import _CryptoExtras

@testable import AuthGateway

/// `identityAssertion`, its keys file, and a route's `assertion` and `exchange`
/// (docs/assertions.md, docs/token-exchange.md): defaults, and every mistake with its JSON path.
@Suite("ConfigurationLoader: identity assertions and token exchange")
struct ConfigurationLoaderAssertionTests {
    /// A temporary folder holding `keys.json` (and whatever a test adds).
    final class Folder {
        let url: URL
        init() throws {
            self.url = FileManager.default.temporaryDirectory.appendingPathComponent("assertion-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: self.url, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: self.url) }
        func write(_ name: String, _ text: String) throws {
            try text.write(to: self.url.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        func writeKeys(_ entries: [JSONValue], name: String = "keys.json") throws {
            try self.write(name, JSONValue.array(entries).jsonText)
        }
    }

    static func entry(_ kid: String, _ status: String, _ algorithm: SigningKey.Algorithm = .ES256) throws -> JSONValue {
        let made = try SigningKey.newEntry(kid: kid, algorithm: algorithm)
        var entry = try #require(made.objectValue)
        entry["status"] = .string(status)
        return .object(entry)
    }

    func load(
        _ folder: Folder, assertion: String? = #"{"issuer": "https://gw.example", "keysFile": "keys.json"}"#,
        route: String = #""assertion": true"#
    ) -> Result<GatewayConfiguration, ConfigurationError> {
        let section = assertion.map { #""identityAssertion": \#($0),"# } ?? ""
        let text = """
            {"listener": {}, "backends": {"orders": {"urls": ["http://127.0.0.1:9100"]}}, \(section)
             "tokens": {"issuers": [{"issuer": "https://idp", "keys": [{"publicKeyPEM": "\(Self.publicPEM)"}]}]},
             "routes": [{"name": "orders", "pathPrefix": "/", "backend": "orders", \(route)}]}
            """
        do throws(ConfigurationError) {
            return .success(
                try ConfigurationLoader(environment: ["SECRET": "s3cret"]).load(
                    text: text, baseDirectory: folder.url.path))
        } catch {
            return .failure(error)
        }
    }

    func issues(
        _ folder: Folder, assertion: String? = #"{"issuer": "https://gw.example", "keysFile": "keys.json"}"#,
        route: String = #""assertion": true"#
    ) -> [String] {
        guard case .failure(let error) = self.load(folder, assertion: assertion, route: route) else { return [] }
        return error.issues.map { "\($0.path): \($0.message)" }
    }

    static let publicPEM = P256.Signing.PrivateKey().publicKey.pemRepresentation.replacingOccurrences(
        of: "\n", with: "\\n")

    @Test(
        "defaults: header X-Gateway-Assertion, 60 s, jwt; the audience is the backend's name; txn-token's header is Txn-Token"
    )
    func defaults() throws {
        let folder = try Folder()
        try folder.writeKeys([
            Self.entry("old", "retired", .RS256), Self.entry("k1", "current"), Self.entry("k2", "next", .EdDSA),
        ])
        let configuration = try self.load(folder).get()
        let assertion = try #require(configuration.identityAssertion)
        #expect(assertion.issuer == "https://gw.example")
        #expect(assertion.header == "X-Gateway-Assertion")
        #expect(assertion.lifetimeSeconds == 60)
        #expect(assertion.format == .jwt)
        #expect(assertion.keysFile == folder.url.appendingPathComponent("keys.json").path)
        #expect(assertion.keys.current.kid == "k1")
        #expect(assertion.keys.entries.map(\.key.algorithm) == [.RS256, .ES256, .EdDSA])
        #expect(configuration.routes[0].assertion?.audience == "orders")
        #expect(configuration.routes[0].assertion?.claims.isEmpty == true)
        let txn = try self.load(
            folder, assertion: #"{"issuer": "i", "keysFile": "keys.json", "format": "txn-token", "lifetimeSeconds": 5}"#
        ).get().identityAssertion
        #expect(txn?.header == "Txn-Token")
        #expect(txn?.lifetimeSeconds == 5)
        // The JWKS lists every key, in file order, with a fixed member order.
        let jwks = try JSONValue(parsing: assertion.keys.jwks)
        #expect(jwks["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } == ["old", "k1", "k2"])
        #expect(assertion.keys.jwks.hasPrefix(#"{"keys":[{"kty":"RSA","kid":"old","use":"sig","alg":"RS256","n":"#))
        #expect(!assertion.keys.jwks.contains("\"d\""))
    }

    @Test("a route's assertion object: audience and claims from identity fields")
    func routeAssertion() throws {
        let folder = try Folder()
        try folder.writeKeys([Self.entry("k1", "current")])
        let route = try self.load(
            folder,
            route:
                #""assertion": {"audience": "orders-api", "claims": {"email": "claims.email", "jkt": "dpop.jkt", "tenant": "claims.org.tenant"}}"#
        ).get().routes[0]
        #expect(route.assertion?.audience == "orders-api")
        #expect(route.assertion?.claims.map(\.name) == ["email", "jkt", "tenant"])
        #expect(route.assertion?.claims.map(\.path.description) == ["claims.email", "dpop.jkt", "claims.org.tenant"])
        // profile.* needs the profile section, as identityHeaders do.
        #expect(
            self.issues(folder, route: #""assertion": {"claims": {"groups": "profile.groups"}}"#).contains {
                $0.hasPrefix("authService.profile: is required")
            })
    }

    @Test("keys files check refuses")
    func refusedKeysFiles() throws {
        let folder = try Folder()
        func issues(_ entries: [JSONValue]) throws -> [String] {
            try folder.writeKeys(entries)
            return self.issues(folder)
        }
        #expect(
            try issues([Self.entry("a", "next")]).contains {
                $0.contains("exactly one key must have \"status\": \"current\" (found 0)")
            })
        #expect(
            try issues([Self.entry("a", "current"), Self.entry("b", "current")]).contains { $0.contains("(found 2)") })
        #expect(
            try issues([Self.entry("a", "current"), Self.entry("a", "retired")]) == [
                "identityAssertion.keysFile[1].kid: duplicate kid \"a\""
            ])
        let short = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).pemRepresentation
        #expect(
            try issues([.object(["kid": "r", "status": "current", "privateKeyPEM": .string(short)])]) == [
                "identityAssertion.keysFile[0].privateKeyPEM: cannot be used: RSA key of 1024 bits is too short (minimum 2048)"
            ])
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        #expect(
            try issues([.object(["kid": "e", "status": "current", "privateKeyPEM": .string(p384)])]).first?.hasPrefix(
                "identityAssertion.keysFile[0].privateKeyPEM: cannot be used: unsupported elliptic curve") == true)
        #expect(
            try issues([
                .object([
                    "kid": "e", "status": "current",
                    "privateKeyPEM": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                ])
            ]).first?.hasPrefix(
                "identityAssertion.keysFile[0].privateKeyPEM: cannot be used:") == true)
        #expect(
            try issues([
                .object([
                    "kid": "p", "status": "current",
                    "privateKeyPEM": .string(P256.Signing.PrivateKey().publicKey.pemRepresentation),
                ])
            ]) == [
                "identityAssertion.keysFile[0].privateKeyPEM: cannot be used: PEM holds \"PUBLIC KEY\", not a private key"
            ])
        let one = try SigningKey.generate(.ES256), other = try SigningKey.generate(.ES256)
        var mismatched = try #require(one.privateJWK(kid: "m"))
        mismatched["x"] = other.publicJWK(kid: "m")["x"]
        #expect(
            try issues([.object(["kid": "m", "status": "current", "jwk": .object(mismatched)])]) == [
                "identityAssertion.keysFile[0].jwk: cannot be used: \"x\" does not belong to the private key"
            ])
        #expect(
            try issues([.object(["kid": "h", "status": "current", "jwk": ["kty": "oct", "k": "c2VjcmV0"]])]).first?
                .contains("oct keys are never used") == true)
        #expect(
            try issues([.object(["kid": "s", "status": "active", "jwk": ["kty": "OKP"]])]).contains(
                "identityAssertion.keysFile[0].status: must be \"next\", \"current\" or \"retired\", not \"active\""))
        #expect(
            try issues([.object(["kid": "n", "status": "current"])]).contains(
                "identityAssertion.keysFile[0]: a key needs exactly one of \"privateKeyPEM\", \"privateKeyPEMFile\" or \"jwk\""
            ))
        // A PEM file beside the keys file.
        try folder.write("ec.pem", P256.Signing.PrivateKey().pemRepresentation)
        #expect(try issues([.object(["kid": "f", "status": "current", "privateKeyPEMFile": "ec.pem"])]).isEmpty)
        #expect(
            try issues([.object(["kid": "f", "status": "current", "privateKeyPEMFile": "missing.pem"])]).first?
                .contains("no such file") == true)
    }

    @Test("section and route errors")
    func errors() throws {
        let folder = try Folder()
        try folder.writeKeys([Self.entry("k1", "current")])
        #expect(
            self.issues(folder, assertion: nil) == [
                "routes[0].assertion: needs an identityAssertion section (docs/assertions.md)"
            ])
        #expect(
            self.issues(folder, assertion: #"{"keysFile": "keys.json"}"#) == ["identityAssertion.issuer: is required"])
        #expect(self.issues(folder, assertion: #"{"issuer": "i"}"#) == ["identityAssertion.keysFile: is required"])
        #expect(
            self.issues(folder, assertion: #"{"issuer": "i", "keysFile": "none.json"}"#).first?.contains("no such file")
                == true)
        #expect(
            self.issues(folder, assertion: #"{"issuer": "i", "keysFile": "keys.json", "format": "paseto"}"#) == [
                "identityAssertion.format: must be \"jwt\" or \"txn-token\", not \"paseto\""
            ])
        #expect(
            self.issues(folder, assertion: #"{"issuer": "i", "keysFile": "keys.json", "lifetimeSeconds": 0}"#).first?
                .hasPrefix("identityAssertion.lifetimeSeconds: must be") == true)
        #expect(
            self.issues(folder, assertion: #"{"issuer": "i", "keysFile": "keys.json", "header": "Authorization"}"#)
                .first?.hasPrefix("identityAssertion.header: ") == true)
        #expect(
            self.issues(folder, assertion: #"{"issuer": "i", "keysFile": "keys.json", "extra": 1}"#) == [
                "identityAssertion.extra: unknown key"
            ])
        #expect(
            self.issues(folder, route: #""assertion": {"claims": {"sub": "claims.email"}}"#) == [
                "routes[0].assertion.claims.sub: \"sub\" is set by the gateway itself; choose another name"
            ])
        #expect(
            self.issues(folder, route: #""assertion": {"claims": {"ip": "client.ip"}}"#) == [
                "routes[0].assertion.claims.ip: expected \"claims.<name>\", \"profile.<name>\" or \"dpop.jkt\""
            ])
        #expect(
            self.issues(folder, route: #""assertion": {"audiences": "x"}"#) == [
                "routes[0].assertion.audiences: unknown key"
            ])
        #expect(
            self.issues(folder, route: #""assertion": "yes""#) == [
                "routes[0].assertion: expected true or an object, found string"
            ])
        #expect(
            self.issues(folder, route: #""auth": "none", "assertion": true"#) == [
                "routes[0].assertion: needs a route with auth"
            ])
    }

    @Test("a route's exchange: defaults, every field, and errors")
    func exchange() throws {
        let folder = try Folder()
        let minimal = try #require(
            self.load(folder, assertion: nil, route: #""exchange": {"tokenEndpoint": "https://idp.example/token"}"#)
                .get().routes[0].exchange)
        #expect(minimal.tokenEndpoint.description == "https://idp.example/token")
        #expect(minimal.grant == .tokenExchange)
        #expect(minimal.clientAuthentication == .basic)
        #expect(minimal.timeoutMilliseconds == 3000)
        #expect(
            minimal.audience.isEmpty && minimal.resource.isEmpty && minimal.scope == nil
                && minimal.extraParameters.isEmpty)
        let full = try #require(
            self.load(
                folder, assertion: nil,
                route:
                    #""exchange": {"tokenEndpoint": "http://127.0.0.1:9/oauth/token", "clientId": "gw", "clientSecret": "${SECRET}", "clientAuthentication": "form", "grant": "jwt-bearer", "audience": ["a", "b"], "scope": "orders.read", "extraParameters": {"requested_token_use": "on_behalf_of"}, "timeoutMilliseconds": 500}"#
            ).get().routes[0].exchange)
        #expect(full.clientID == "gw" && full.clientSecret?.value == "s3cret" && full.clientAuthentication == .form)
        #expect("\(full)".contains("s3cret") == false)
        #expect(full.grant == .jwtBearer && full.audience == ["a", "b"] && full.scope == "orders.read")
        #expect(full.extraParameters == [.init(name: "requested_token_use", value: "on_behalf_of")])
        #expect(full.timeoutMilliseconds == 500)
        let cases: [(String, String)] = [
            (#"{}"#, "routes[0].exchange.tokenEndpoint: is required"),
            (
                #"{"tokenEndpoint": "ftp://x"}"#,
                "routes[0].exchange.tokenEndpoint: \"ftp://x\" must start with http:// or https://"
            ),
            (
                #"{"tokenEndpoint": "http://x", "grant": "password"}"#,
                "routes[0].exchange.grant: must be \"token-exchange\" or \"jwt-bearer\", not \"password\""
            ),
            (#"{"tokenEndpoint": "http://x", "clientSecret": "s"}"#, "routes[0].exchange.clientSecret: needs clientId"),
            (
                #"{"tokenEndpoint": "http://x", "clientAuthentication": "jwt"}"#,
                "routes[0].exchange.clientAuthentication: must be \"basic\" or \"form\""
            ),
            (
                #"{"tokenEndpoint": "http://x", "grant": "jwt-bearer", "resource": ["r"]}"#,
                "routes[0].exchange.resource: applies only to grant \"token-exchange\""
            ),
            (
                #"{"tokenEndpoint": "http://x", "extraParameters": {"subject_token": "x"}}"#,
                "routes[0].exchange.extraParameters.subject_token: \"subject_token\" is a field the gateway sets itself"
            ),
            (
                #"{"tokenEndpoint": "http://x", "extraParameters": {"n": 1}}"#,
                "routes[0].exchange.extraParameters.n: expected a string, found number"
            ),
            (
                #"{"tokenEndpoint": "http://x", "timeoutMilliseconds": 0}"#,
                "routes[0].exchange.timeoutMilliseconds: must be between 1 and 3600000, found 0"
            ),
            (#"{"tokenEndpoint": "http://x", "audiences": []}"#, "routes[0].exchange.audiences: unknown key"),
        ]
        for (exchange, expected) in cases {
            #expect(
                self.issues(folder, assertion: nil, route: #""exchange": \#(exchange)"#) == [expected], "\(exchange)")
        }
        #expect(
            self.issues(
                folder, assertion: nil,
                route: #""forwardAccessToken": false, "exchange": {"tokenEndpoint": "http://x"}"#) == [
                    "routes[0].exchange: forwards the exchanged token: it cannot go with forwardAccessToken false"
                ])
    }
}
