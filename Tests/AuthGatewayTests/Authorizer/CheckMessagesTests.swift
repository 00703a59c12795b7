import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

/// The gRPC `Check`'s pure conversions (docs/authorizer.md): the unary framing, a
/// `CheckRequest` to the original request, answers to `CheckResponse`s.
@Suite("CheckMessages: Envoy's Check, without I/O")
struct CheckMessagesTests {
    static func checkRequest(headers: [String: String] = [:]) -> Envoy_Service_Auth_V3_CheckRequest {
        var request = Envoy_Service_Auth_V3_CheckRequest()
        request.attributes.source.address.socketAddress.address = "203.0.113.7"
        request.attributes.request.http.method = "POST"
        request.attributes.request.http.path = "/api/orders?id=7"
        request.attributes.request.http.host = "shop.example.com"
        request.attributes.request.http.scheme = "https"
        request.attributes.request.http.headers = headers
        return request
    }

    @Test func unaryFraming() throws {
        let framed = CheckMessages.frame(Self.checkRequest())
        let message = try #require(CheckMessages.message(in: framed))
        let decoded = try Envoy_Service_Auth_V3_CheckRequest(serializedBytes: Array(message.readableBytesView))
        #expect(decoded == Self.checkRequest())
        // Compressed, truncated, or trailing bytes: not one uncompressed message.
        var compressed = framed
        compressed.setInteger(UInt8(1), at: compressed.readerIndex)
        #expect(CheckMessages.message(in: compressed) == nil)
        #expect(CheckMessages.message(in: framed.getSlice(at: 0, length: framed.readableBytes - 1)!) == nil)
        var longer = framed
        longer.writeInteger(UInt8(0))
        #expect(CheckMessages.message(in: longer) == nil)
        #expect(CheckMessages.message(in: ByteBuffer(bytes: [0, 0])) == nil)
    }

    @Test func theOriginalRequest() throws {
        let original = try CheckMessages.original(
            Self.checkRequest(headers: [
                ":authority": "shop.example.com", ":path": "/api/orders?id=7", ":method": "POST",
                "authorization": "Bearer t", "content-length": "17", "x-forwarded-for": "10.0.0.1",
            ]), peerIP: "127.0.0.1"
        ).get()
        #expect(original.method == .POST)
        #expect(original.scheme == "https")
        #expect(original.host == "shop.example.com")
        #expect(original.uri == "/api/orders?id=7")
        #expect(original.clientIP == "203.0.113.7")
        #expect(original.headers.map(\.name) == ["Host", "authorization"])
    }

    @Test func withoutASourceTheCallerIsTheClient() throws {
        var request = Self.checkRequest()
        request.attributes.source = Envoy_Service_Auth_V3_AttributeContext.Peer()
        #expect(try CheckMessages.original(request, peerIP: "::1").get().clientIP == "::1")
    }

    @Test func incompleteRequestsAreNamed() {
        var request = Self.checkRequest()
        request.attributes.request.http.method = ""
        #expect(
            CheckMessages.original(request, peerIP: "127.0.0.1")
                == .failure(.missing("attributes.request.http.method")))
        request = Self.checkRequest()
        request.attributes.request.http.path = ""
        #expect(
            CheckMessages.original(request, peerIP: "127.0.0.1") == .failure(.missing("attributes.request.http.path")))
        request = Self.checkRequest(headers: ["bad name": "x"])
        #expect(
            CheckMessages.original(request, peerIP: "127.0.0.1")
                == .failure(.invalid("attributes.request.http.headers")))
    }

    @Test func answers() {
        let allowed = CheckMessages.allowed(
            headers: [("X-User-Subject", "alice")], remove: ["x-user-role"], responseHeaders: [("Set-Cookie", "a=b")])
        #expect(allowed.status.code == 0)
        #expect(allowed.okResponse.headers.map(\.header.key) == ["x-user-subject"])
        #expect(allowed.okResponse.headers.first?.appendAction == .overwriteIfExistsOrAdd)
        #expect(allowed.okResponse.headersToRemove == ["x-user-role"])
        #expect(allowed.okResponse.responseHeadersToAdd.first?.header.value == "a=b")

        let denied = CheckMessages.denied(
            status: 401, headers: [("WWW-Authenticate", "Bearer")], body: "{}", message: "An access token is required")
        #expect(denied.status.code == 16)
        #expect(denied.deniedResponse.status.code == .unauthorized)
        #expect(denied.deniedResponse.body == "{}")
        #expect([403, 429, 503, 502, 400, 401, 302].map(CheckMessages.rpcCode(status:)) == [7, 8, 14, 14, 3, 16, 16])
    }
}
