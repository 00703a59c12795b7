import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

/// What the gateway sends the token endpoint and how it reads the answer
/// (docs/token-exchange.md), without a server.
@Suite("Token exchange: request and answer")
struct ExchangeRequestTests {
    static let endpoint = try! UpstreamURL.parse("https://idp.example/oauth/token").get()

    func form(_ request: UpstreamRequest) -> [String] {
        String(buffer: request.body ?? ByteBuffer()).split(separator: "&").map(String.init)
    }

    @Test(
        "RFC 8693: grant, subject token and type, each audience and resource, scope, extra parameters; Basic client authentication"
    )
    func tokenExchange() {
        let configuration = ExchangeConfiguration(
            tokenEndpoint: Self.endpoint, clientID: "gate way", clientSecret: "s:cret", grant: .tokenExchange,
            audience: ["orders-api", "billing"], resource: ["https://orders.example/"], scope: "orders.read write",
            extraParameters: [
                .init(name: "requested_token_type", value: "urn:ietf:params:oauth:token-type:access_token")
            ])
        let request = ExchangeRequestBuilder.build(configuration, subjectToken: "eyJ.subject")
        #expect(request.method == .POST && request.path == "/oauth/token")
        #expect(request.headers["Content-Type"] == ["application/x-www-form-urlencoded"])
        // RFC 6749 §2.3.1: each part form-encoded, then base64.
        let basic = Data("gate+way:s%3Acret".utf8).base64EncodedString()
        #expect(request.headers["Authorization"] == ["Basic \(basic)"])
        #expect(
            self.form(request) == [
                "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange", "subject_token=eyJ.subject",
                "subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token",
                "resource=https%3A%2F%2Forders.example%2F", "audience=orders-api", "audience=billing",
                "scope=orders.read+write",
                "requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token",
            ])
    }

    @Test("RFC 7523: the caller's token as assertion; form client authentication")
    func jwtBearer() {
        let configuration = ExchangeConfiguration(
            tokenEndpoint: Self.endpoint, clientID: "gw", clientSecret: "secret", clientAuthentication: .form,
            grant: .jwtBearer, extraParameters: [.init(name: "requested_token_use", value: "on_behalf_of")])
        let request = ExchangeRequestBuilder.build(configuration, subjectToken: "eyJ.caller")
        #expect(request.headers["Authorization"].isEmpty)
        #expect(
            self.form(request) == [
                "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer", "assertion=eyJ.caller",
                "requested_token_use=on_behalf_of", "client_id=gw", "client_secret=secret",
            ])
    }

    func answer(_ status: HTTPResponseStatus, _ body: String, subjectExpiresAt: Double? = nil) -> ExchangeOutcome {
        ExchangeResponseReader.outcome(
            of: UpstreamResponse(status: status, headers: [:], body: ByteBuffer(string: body)),
            subjectExpiresAt: subjectExpiresAt, now: 1000)
    }

    @Test(
        "answers: usable until expires_in − 30 s (or exp − 30 s), never past the subject token; refusals name the code; the rest is unavailable"
    )
    func answers() {
        #expect(
            self.answer(.ok, #"{"access_token":"new","expires_in":300}"#) == .exchanged(token: "new", usableUntil: 1270)
        )
        #expect(
            self.answer(.ok, #"{"access_token":"new","expires_in":300}"#, subjectExpiresAt: 1100)
                == .exchanged(token: "new", usableUntil: 1100))
        let jwt = "eyJhbGciOiJub25lIn0.\(Base64URL.encode(Array(#"{"exp":1600}"#.utf8))).sig"
        #expect(self.answer(.ok, #"{"access_token":"\#(jwt)"}"#) == .exchanged(token: jwt, usableUntil: 1570))
        // Neither says: used by the requests that waited, not kept.
        #expect(self.answer(.ok, #"{"access_token":"opaque"}"#) == .exchanged(token: "opaque", usableUntil: 970))
        for code in ["invalid_grant", "invalid_target", "invalid_scope", "unauthorized_client", "invalid_request"] {
            #expect(
                self.answer(.badRequest, #"{"error":"\#(code)","error_description":"secret detail"}"#)
                    == .refused(code: code))
        }
        #expect(self.answer(.unauthorized, #"{"error":"invalid_client"}"#) == .refused(code: "invalid_client"))
        #expect(self.answer(.unauthorized, "") == .unavailable)
        #expect(self.answer(.tooManyRequests, #"{"error":"slow_down"}"#) == .unavailable)
        #expect(self.answer(.internalServerError, #"{"error":"server_error"}"#) == .unavailable)
        #expect(self.answer(.serviceUnavailable, "") == .unavailable)
        #expect(self.answer(.ok, "not json") == .unavailable)
        #expect(self.answer(.ok, #"{"token_type":"Bearer"}"#) == .unavailable)
        #expect(self.answer(.ok, #"{"access_token":"a\r\nX-Injected: 1"}"#) == .unavailable)
    }

    @Test(
        "a refusal names only the provider's well-formed code: 403 exchange.refused; unavailable is 503 with Retry-After"
    )
    func errors() {
        let refused = GatewayError.exchangeRefused("invalid_grant")
        #expect(refused.status == .forbidden && refused.errorType == "exchange.refused")
        #expect(refused.detail == "The token endpoint refused the token exchange (invalid_grant)")
        #expect(GatewayError.exchangeRefused("bad \"code\"\n").detail.hasSuffix("(unknown)"))
        #expect(GatewayError.exchangeUnavailable.status == .serviceUnavailable)
        #expect(GatewayError.exchangeUnavailable.retryAfterSeconds == 5)
        #expect(GatewayError.exchangeUnavailable.errorType == "exchange.unavailable")
    }

    @Test("the store's key: one per (subject token, route), never a bare token digest")
    func keys() {
        let a = TokenDigest.exchange(subjectToken: "t1", route: "orders")
        #expect(a == TokenDigest.exchange(subjectToken: "t1", route: "orders"))
        #expect(a != TokenDigest.exchange(subjectToken: "t1", route: "billing"))
        #expect(a != TokenDigest.exchange(subjectToken: "t2", route: "orders"))
        #expect(a != TokenDigest(of: "t1"[...]))
        // No ambiguity between route and token bytes.
        #expect(
            TokenDigest.exchange(subjectToken: "b\u{0}c", route: "a")
                != TokenDigest.exchange(subjectToken: "c", route: "a\u{0}b"))
    }
}
