import NIOCore
import Testing

@testable import AuthGateway

/// h2c by prior knowledge or HTTP/1.1 from a cleartext connection's first bytes (docs/http2.md).
@Suite("CleartextProtocol")
struct CleartextProtocolTests {
    static func classify(_ text: String) -> CleartextProtocol {
        CleartextProtocol.classify(ByteBuffer(string: text))
    }

    @Test func thePrefaceIsHTTP2AndAnyPrefixOfItWaits() {
        #expect(Self.classify("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == .http2)
        #expect(Self.classify("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\u{0}\u{0}\u{0}") == .http2)
        #expect(Self.classify("PRI * HTTP/2") == .undecided)
        #expect(Self.classify("P") == .undecided)
        #expect(Self.classify("") == .undecided)
    }

    @Test func anythingElseIsHTTP1() {
        #expect(Self.classify("GET / HTTP/1.1\r\n") == .http1)
        #expect(Self.classify("POST") == .http1)
        #expect(Self.classify("PRI * HTTP/1.1\r\n") == .http1)
        // An `Upgrade: h2c` request is HTTP/1.1 (served as such, docs/http2.md).
        #expect(Self.classify("GET / HTTP/1.1\r\nUpgrade: h2c\r\n\r\n") == .http1)
    }
}
