import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("LocalResponse")
struct LocalResponseTests {
    @Test("a problem response: problem+json, no-store, the challenge and Retry-After when they apply")
    func problem() throws {
        let unauthorized = LocalResponse.problem(.tokenRejected(.expired), requestID: "r1")
        #expect(unauthorized.status == .unauthorized)
        #expect(unauthorized.headers["Content-Type"] == ["application/problem+json"])
        #expect(unauthorized.headers["Cache-Control"] == ["no-store"])
        #expect(unauthorized.headers["WWW-Authenticate"].count == 1)
        #expect(unauthorized.headers["WWW-Authenticate"].first?.contains(#"error="invalid_token""#) == true)
        #expect(unauthorized.headers["Retry-After"].isEmpty)
        #expect(unauthorized.error == .tokenRejected(.expired))
        #expect(try JSONValue(parsing: unauthorized.body)["requestId"] == "r1")

        let unavailable = LocalResponse.problem(
            .authServiceUnavailable, requestID: "r2", extraHeaders: [("Set-Cookie", "a=; Max-Age=0")])
        #expect(unavailable.status == .serviceUnavailable)
        #expect(unavailable.headers["Retry-After"] == ["5"])
        #expect(unavailable.headers["WWW-Authenticate"].isEmpty)
        #expect(unavailable.headers["Set-Cookie"] == ["a=; Max-Age=0"])
    }

    @Test("json and text responses")
    func jsonAndText() throws {
        let json = LocalResponse.json(.ok, ["status": "ok"])
        #expect(json.headers["Content-Type"] == ["application/json"])
        #expect(try JSONValue(parsing: json.body) == ["status": "ok"])
        #expect(json.error == nil)
        let text = LocalResponse.text(.serviceUnavailable, "draining")
        #expect(text.status == .serviceUnavailable)
        #expect(text.body == "draining")
        #expect(text.headers["Content-Type"].first?.hasPrefix("text/plain") == true)
    }
}
