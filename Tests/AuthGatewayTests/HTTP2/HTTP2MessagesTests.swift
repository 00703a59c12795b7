import NIOHPACK
import Testing

@testable import AuthGateway

/// `HTTP2Messages.request`: what a request's HEADERS must be before the request phases see
/// them.
@Suite("HTTP2Messages")
struct HTTP2MessagesTests {
    static let pseudo = [(":method", "GET"), (":path", "/a"), (":scheme", "http"), (":authority", "gw")]

    /// The header list's size as RFC 9113 §6.5.2 measures it (and NIOHPACK, and
    /// SETTINGS_MAX_HEADER_LIST_SIZE): each field's name and value, plus 32.
    static func listSize(_ block: HPACKHeaders) -> Int {
        block.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 }
    }

    /// `limits.maxHeaderBytes` holds for every request, whatever NIOHTTP2's decoder let through
    /// (it applies the advertised size only once the client acknowledged the SETTINGS): a
    /// list up to the limit is a request, one byte more is 431.
    @Test func aHeaderListOverTheLimitIsRefusedWith431() throws {
        let block = HPACKHeaders(Self.pseudo + [("x-big", String(repeating: "b", count: 5000))])
        let size = Self.listSize(block)
        let fits = HTTP2Messages.request(block, endStream: true, maxHeaderListSize: size, maxBodyBytes: 1000)
        #expect(throws: Never.self) { try fits.get() }
        let over = HTTP2Messages.request(block, endStream: true, maxHeaderListSize: size - 1, maxBodyBytes: 1000)
        #expect(throws: GatewayError.headersTooLarge) { try over.get() }
        #expect(GatewayError.headersTooLarge.status.code == 431)
    }
}
