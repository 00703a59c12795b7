import NIOHTTP1
import Testing

@testable import AuthGateway

/// Rebuilding the original request from each HTTP contract's call (docs/authorizer.md): pure,
/// no I/O.
@Suite("OriginalRequest: rebuilding the request another proxy asks about")
struct OriginalRequestTests {
    static let extAuthzPrefix = "/.gateway/authz/ext-authz"

    func rebuild(
        _ contract: AuthorizerContract, method: HTTPMethod = .GET, uri: String = "/.gateway/authz/auth-request",
        _ headers: [(String, String)], peer: String = "127.0.0.1"
    ) -> Result<OriginalRequest, AuthorizerCallError> {
        OriginalRequest.rebuild(
            contract, method: method, uri: uri, headers: HTTPHeaders(headers), extAuthzPrefix: Self.extAuthzPrefix,
            peerIP: peer)
    }

    @Test func contractsByName() {
        #expect(AuthorizerContract.named("auth-request") == .authRequest)
        #expect(AuthorizerContract.named("forward-auth") == .forwardAuth)
        #expect(AuthorizerContract.named("ext-authz") == .extAuthz)
        #expect(AuthorizerContract.named("ext-authz/api/x") == .extAuthz)
        #expect(AuthorizerContract.named("ext-authzz") == nil)
        #expect(AuthorizerContract.named("auth-request/x") == nil)
        #expect(AuthorizerContract.named("") == nil)
    }

    @Test func nginxAuthRequest() throws {
        let original = try self.rebuild(
            .authRequest,
            [
                ("Host", "gateway.internal"), ("X-Original-Method", "POST"), ("X-Original-URI", "/api/orders?id=7"),
                ("X-Forwarded-Host", "shop.example.com"), ("X-Forwarded-Proto", "https"),
                ("X-Real-IP", "198.51.100.4"), ("X-Forwarded-For", "10.9.9.9, 203.0.113.7"),
                ("Authorization", "Bearer abc"), ("Content-Length", "0"), ("Connection", "close, X-Hop"),
                ("X-Hop", "1"), ("Cookie", "a=b"),
            ]
        ).get()
        #expect(original.method == .POST)
        #expect(original.scheme == "https" && original.isTLS)
        #expect(original.host == "shop.example.com")
        #expect(original.uri == "/api/orders?id=7")
        // nginx's X-Real-IP ($remote_addr) first.
        #expect(original.clientIP == "198.51.100.4")
        // The caller's framing, its contract headers and what Connection names are not the original's.
        #expect(
            original.headers.map { "\($0.name): \($0.value)" } == [
                "Host: shop.example.com", "Authorization: Bearer abc", "Cookie: a=b",
            ])
    }

    @Test func ingressNginxOriginalURL() throws {
        let original = try self.rebuild(
            .authRequest,
            [
                ("Host", "authz"), ("X-Original-Method", "get"),
                ("X-Original-URL", "https://app.example.com:8443/a/b?c=d"), ("X-Forwarded-For", "203.0.113.7"),
            ]
        ).get()
        #expect(original.method == .GET)
        #expect(original.scheme == "https")
        #expect(original.host == "app.example.com:8443")
        #expect(original.uri == "/a/b?c=d")
        #expect(original.clientIP == "203.0.113.7")
    }

    @Test func missingContractHeadersAreNamed() {
        #expect(
            self.rebuild(.authRequest, [("X-Original-URI", "/")]) == .failure(.missing("X-Original-Method")))
        #expect(
            self.rebuild(.authRequest, [("X-Original-Method", "GET")]) == .failure(.missing("X-Original-URI")))
        #expect(
            self.rebuild(.forwardAuth, [("X-Forwarded-Uri", "/")]) == .failure(.missing("X-Forwarded-Method")))
        #expect(
            self.rebuild(.forwardAuth, [("X-Forwarded-Method", "GET")]) == .failure(.missing("X-Forwarded-Uri")))
        #expect(
            AuthorizerCallError.missing("X-Original-URI").description
                == "The authorizer call lacks the X-Original-URI header its contract needs")
    }

    @Test func invalidContractHeadersAreRefused() {
        #expect(
            self.rebuild(.authRequest, [("X-Original-Method", "G T"), ("X-Original-URI", "/")])
                == .failure(.invalid("X-Original-Method")))
        #expect(
            self.rebuild(.authRequest, [("X-Original-Method", "GET"), ("X-Original-URI", "api")])
                == .failure(.invalid("X-Original-URI")))
        #expect(
            self.rebuild(.authRequest, [("X-Original-Method", "GET"), ("X-Original-URL", "nohost")])
                == .failure(.invalid("X-Original-URL")))
        #expect(
            self.rebuild(
                .forwardAuth, [("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/"), ("X-Forwarded-Proto", "ftp")])
                == .failure(.invalid("X-Forwarded-Proto")))
        // A host is judged with the path, as a proxied request's is (`RequestTarget`): it is
        // rebuilt as sent, and the decision refuses it as ambiguous.
        let userinfo = try? self.rebuild(
            .forwardAuth, [("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/"), ("X-Forwarded-Host", "user@evil")]
        ).get()
        #expect(userinfo?.host == "user@evil")
    }

    @Test func traefikAndCaddyForwardAuth() throws {
        let original = try self.rebuild(
            .forwardAuth, uri: "/.gateway/authz/forward-auth",
            [
                ("Host", "shop.example.com"), ("X-Forwarded-Method", "DELETE"), ("X-Forwarded-Proto", "http"),
                ("X-Forwarded-Host", "shop.example.com"), ("X-Forwarded-Uri", "/api/items/3"),
                ("X-Forwarded-For", "forged, 203.0.113.9"), ("Accept", "application/json"),
            ]
        ).get()
        #expect(original.method == .DELETE)
        #expect(original.scheme == "http" && !original.isTLS)
        #expect(original.host == "shop.example.com")
        #expect(original.uri == "/api/items/3")
        // The hop the caller itself saw; the client's own hops are not believed.
        #expect(original.clientIP == "203.0.113.9")
        #expect(original.headers.map(\.name) == ["Host", "Accept"])
    }

    @Test func envoyExtAuthzHTTP() throws {
        let original = try self.rebuild(
            .extAuthz, method: .PUT, uri: Self.extAuthzPrefix + "/api/orders/1?x=%2F",
            [
                ("Host", "shop.example.com"), ("X-Forwarded-Proto", "https"), ("Content-Length", "17"),
                ("X-Forwarded-For", "203.0.113.7"), ("Authorization", "Bearer t"),
            ]
        ).get()
        #expect(original.method == .PUT)
        #expect(original.uri == "/api/orders/1?x=%2F")
        #expect(original.host == "shop.example.com")
        #expect(original.scheme == "https")
        #expect(original.clientIP == "203.0.113.7")
        // The caller's Content-Length describes its call, not the original request.
        #expect(original.headers.map(\.name) == ["Host", "Authorization"])

        let root = try self.rebuild(.extAuthz, uri: Self.extAuthzPrefix, [("Host", "h")]).get()
        #expect(root.uri == "/")
    }

    @Test func withoutAddressHeadersTheCallerIsTheClient() throws {
        let original = try self.rebuild(
            .forwardAuth, [("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/")], peer: "::1"
        ).get()
        #expect(original.clientIP == "::1")
        #expect(original.host == nil)
        #expect(original.scheme == "http")
    }
}
