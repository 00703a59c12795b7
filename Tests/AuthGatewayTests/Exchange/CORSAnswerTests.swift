import NIOHTTP1
import Testing

@testable import AuthGateway

/// The pure CORS answers (docs/policies.md, "CORS"), without I/O.
@Suite("CORS answers")
struct CORSAnswerTests {
    static let cors: CORSConfiguration = {
        var cors = CORSConfiguration(allowOrigins: ["https://app.example.com"])
        cors.allowMethods = ["GET", "PUT"]
        cors.allowHeaders = ["authorization", "content-type"]
        cors.exposeHeaders = ["X-Request-Id", "RateLimit"]
        cors.allowCredentials = true
        cors.maxAgeSeconds = 60
        return cors
    }()

    static func preflight(
        _ method: HTTPMethod = .OPTIONS, origin: String? = "https://app.example.com", requested: String? = "PUT",
        headers requestedHeaders: [String] = []
    ) -> CORS.Preflight? {
        var headers = HTTPHeaders()
        if let origin { headers.add(name: "Origin", value: origin) }
        if let requested { headers.add(name: "Access-Control-Request-Method", value: requested) }
        for value in requestedHeaders { headers.add(name: "Access-Control-Request-Headers", value: value) }
        return CORS.Preflight(method: method, headers: headers)
    }

    @Test("only OPTIONS with Origin and Access-Control-Request-Method is a preflight")
    func recognition() throws {
        #expect(Self.preflight() != nil)
        #expect(Self.preflight(.GET) == nil)
        #expect(Self.preflight(origin: nil) == nil)
        #expect(Self.preflight(requested: nil) == nil)
        let split = try #require(Self.preflight(headers: ["Authorization, X-A", "x-b"]))
        #expect(split.headers == ["authorization", "x-a", "x-b"])
    }

    @Test("a granted preflight: 204, the origin echoed, methods, headers, credentials, max age")
    func granted() throws {
        let response = CORS.answer(
            try #require(Self.preflight(headers: ["Content-Type"])), cors: Self.cors, requestID: "r")
        #expect(response.status == .noContent)
        #expect(response.headers["access-control-allow-origin"] == ["https://app.example.com"])
        #expect(response.headers["access-control-allow-methods"] == ["GET, PUT"])
        #expect(response.headers["access-control-allow-headers"] == ["content-type"])
        #expect(response.headers["access-control-allow-credentials"] == ["true"])
        #expect(response.headers["access-control-max-age"] == ["60"])
        #expect(response.body.isEmpty)
    }

    @Test("refusals: a 403 problem naming what is not allowed, with no CORS fields")
    func refused() throws {
        let cases: [(CORS.Preflight?, String)] = [
            (Self.preflight(origin: "https://app.example.com.evil.example"), "the origin is not allowed"),
            (Self.preflight(origin: "null"), "the origin is not allowed"),
            (Self.preflight(requested: "DELETE"), "the method DELETE is not allowed"),
            (Self.preflight(requested: "GET\u{1}"), "the method is not allowed"),
            (Self.preflight(headers: ["authorization, x-other"]), "the header x-other is not allowed"),
        ]
        for (preflight, detail) in cases {
            let response = CORS.answer(try #require(preflight), cors: Self.cors, requestID: "r")
            #expect(response.status == .forbidden, "\(detail)")
            #expect(response.error?.detail == "The cross-origin request is not allowed: \(detail)")
            #expect(!response.headers.contains { $0.name.lowercased().hasPrefix("access-control-") })
        }
    }

    @Test("allowHeaders * allows any requested header")
    func anyHeader() throws {
        var cors = Self.cors
        cors.allowHeaders = ["*"]
        let response = CORS.answer(try #require(Self.preflight(headers: ["x-anything"])), cors: cors, requestID: "r")
        #expect(response.status == .noContent)
        #expect(response.headers["access-control-allow-headers"] == ["x-anything"])
    }

    @Test("actual answers: CORS fields for an allowed origin only, Vary: Origin always")
    func responseFields() {
        let allowed = CORS.responseHeaders(Self.cors, origin: "https://app.example.com")
        #expect(
            allowed.map(\.name) == [
                "Access-Control-Allow-Origin", "Vary", "Access-Control-Allow-Credentials",
                "Access-Control-Expose-Headers",
            ])
        #expect(allowed.first?.value == "https://app.example.com")
        #expect(allowed.last?.value == "X-Request-Id, RateLimit")
        for origin in ["https://evil.example", nil] {
            #expect(CORS.responseHeaders(Self.cors, origin: origin).map(\.name) == ["Vary"])
        }
        // `*` in allowOrigins still answers with the origin itself.
        #expect(
            CORS.responseHeaders(CORSConfiguration(allowOrigins: ["*"]), origin: "https://x.example").first?.value
                == "https://x.example")
    }
}
