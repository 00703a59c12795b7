import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("RequestFraming")
struct RequestFramingTests {
    private func validate(
        _ headers: [(String, String)], version: HTTPVersion = .http1_1, method: HTTPMethod = .POST,
        maxBodyBytes: Int = 1000
    ) -> Result<BodyFraming, GatewayError> {
        RequestFraming.validate(
            HTTPRequestHead(version: version, method: method, uri: "/", headers: HTTPHeaders(headers)),
            maxBodyBytes: maxBodyBytes)
    }

    /// Refused as malformed: 400 and `invalid_request`.
    private func isMalformed(_ result: Result<BodyFraming, GatewayError>) -> Bool {
        guard case .failure(let error) = result else { return false }
        return error.errorType == "request.malformed" && error.status == .badRequest
            && error.oauthError == "invalid_request"
    }

    @Test("no body, fixed length and chunked")
    func framings() {
        #expect(validate([("Host", "h")], method: .GET) == .success(.none))
        #expect(validate([("Host", "h"), ("Content-Length", "5")]) == .success(.contentLength(5)))
        #expect(validate([("Host", "h"), ("Content-Length", "0")]) == .success(.none))
        #expect(validate([("Host", "h"), ("Transfer-Encoding", "chunked")]) == .success(.chunked))
        #expect(validate([("Host", "h"), ("transfer-encoding", " Chunked ")]) == .success(.chunked))
    }

    @Test("agreeing Content-Length values are accepted (RFC 9110 §8.6)")
    func agreeingLengths() {
        #expect(validate([("Host", "h"), ("Content-Length", "5, 5")]) == .success(.contentLength(5)))
        #expect(
            validate([("Host", "h"), ("Content-Length", "5"), ("content-length", "5")]) == .success(.contentLength(5)))
    }

    @Test("two different Content-Lengths are refused")
    func conflictingLengths() {
        #expect(isMalformed(validate([("Host", "h"), ("Content-Length", "5"), ("Content-Length", "6")])))
        #expect(isMalformed(validate([("Host", "h"), ("Content-Length", "5, 6")])))
        #expect(isMalformed(validate([("Host", "h"), ("Content-Length", "05, 6")])))
        // The same number written differently is refused too: no room for two readings.
        #expect(isMalformed(validate([("Host", "h"), ("Content-Length", "05"), ("Content-Length", "5")])))
        #expect(isMalformed(validate([("Host", "h"), ("Content-Length", "5, 05")])))
    }

    @Test(
        "invalid Content-Length values are refused",
        arguments: ["", " ", "-1", "+5", "5a", "0x10", "1e3", "5,", ",5", "5 5", "9999999999999999999", "١"])
    func invalidLength(_ value: String) {
        #expect(isMalformed(validate([("Host", "h"), ("Content-Length", value)])))
    }

    @Test("Content-Length with Transfer-Encoding is refused, in either order")
    func lengthAndEncoding() {
        #expect(isMalformed(validate([("Host", "h"), ("Content-Length", "5"), ("Transfer-Encoding", "chunked")])))
        #expect(isMalformed(validate([("Host", "h"), ("Transfer-Encoding", "chunked"), ("Content-Length", "5")])))
        #expect(isMalformed(validate([("Host", "h"), ("Transfer-Encoding", "chunked"), ("Content-Length", "0")])))
    }

    @Test(
        "transfer codings other than a single chunked are refused",
        arguments: [
            [("Transfer-Encoding", "gzip")],
            [("Transfer-Encoding", "gzip, chunked")],
            [("Transfer-Encoding", "chunked, chunked")],
            [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")],
            [("Transfer-Encoding", "chunked"), ("transfer-encoding", "gzip")],
            [("Transfer-Encoding", "identity")],
            [("Transfer-Encoding", "")],
            [("Transfer-Encoding", "xchunked")],
        ])
    func badTransferEncoding(_ headers: [(String, String)]) {
        #expect(isMalformed(validate([("Host", "h")] + headers)))
    }

    @Test("Transfer-Encoding in an HTTP/1.0 request is refused")
    func transferEncodingInHTTP10() {
        #expect(isMalformed(validate([("Host", "h"), ("Transfer-Encoding", "chunked")], version: .http1_0)))
        #expect(isMalformed(validate([("Transfer-Encoding", "chunked")], version: .http1_0)))
    }

    @Test("Host: required once in HTTP/1.1, optional in HTTP/1.0, never twice")
    func host() {
        #expect(isMalformed(validate([], method: .GET)))
        #expect(validate([], version: .http1_0, method: .GET) == .success(.none))
        // Two hosts: which one a server routes by is not guessed (docs/forwarding.md).
        let two = GatewayError.ambiguousHost(AmbiguousHost.several.description)
        #expect(validate([("Host", "a"), ("Host", "a")], method: .GET) == .failure(two))
        #expect(validate([("Host", "a"), ("host", "b")], method: .GET) == .failure(two))
        #expect(validate([("Host", "a"), ("Host", "b")], version: .http1_0, method: .GET) == .failure(two))
    }

    /// One Host's spelling is the target's business (`RequestTarget`, `CanonicalHostTests`),
    /// answered 400 `request.ambiguous_host` on a connection that stays open.
    @Test("Host values are judged with the target, not by the framing")
    func hostValues() {
        for value in ["api.example.com", "[::1]:8080", "", "a b", "a@b", "a,b"] {
            #expect(validate([("Host", value)], method: .GET) == .success(.none), "\(value)")
        }
    }

    @Test("a Content-Length over the limit is refused as too large (413) before any body is read")
    func bodyTooLarge() {
        #expect(validate([("Host", "h"), ("Content-Length", "1001")], maxBodyBytes: 1000) == .failure(.bodyTooLarge))
        #expect(
            validate([("Host", "h"), ("Content-Length", "1000")], maxBodyBytes: 1000) == .success(.contentLength(1000)))
        #expect(GatewayError.bodyTooLarge.status == .payloadTooLarge)
        // A malformed head is refused as such even when it is also too large.
        #expect(
            isMalformed(
                validate([("Host", "h"), ("Content-Length", "2000"), ("Content-Length", "3000")], maxBodyBytes: 1000)))
    }

    @Test("upgrade requests")
    func upgrade() {
        func head(_ headers: [(String, String)]) -> HTTPRequestHead {
            HTTPRequestHead(version: .http1_1, method: .GET, uri: "/", headers: HTTPHeaders(headers))
        }
        #expect(RequestFraming.isUpgrade(head([("Upgrade", "websocket"), ("Connection", "Upgrade")])))
        #expect(RequestFraming.isUpgrade(head([("Upgrade", "websocket"), ("Connection", "keep-alive, upgrade")])))
        #expect(!RequestFraming.isUpgrade(head([("Upgrade", "websocket")])))
        #expect(!RequestFraming.isUpgrade(head([("Connection", "Upgrade")])))
        #expect(!RequestFraming.isUpgrade(head([("Upgrade", "websocket"), ("Connection", "keep-alive")])))
    }
}
