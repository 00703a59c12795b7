import NIOCore
import NIOHTTP1

/// Writes HTTP/1.1 messages as bytes: request heads for backends, response heads for clients
/// (from a backend's head, copying the kept fields' bytes), chunk framing.
///
/// No validation happens here: every name and value written was either checked by the parser
/// (`HeadScanner`) or where it entered the gateway (identity values, refreshed tokens,
/// configuration).
enum HTTPWriter {
    static let continueResponse: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
    static let lastChunk: StaticString = "0\r\n\r\n"

    static func requestHead(_ head: HTTPRequestHead, into buffer: inout ByteBuffer) {
        buffer.writeString(head.method.rawValue)
        buffer.writeStaticString(" ")
        buffer.writeString(head.uri)
        buffer.writeStaticString(head.version == .http1_0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n")
        Self.fields(head.headers, into: &buffer)
        buffer.writeStaticString("\r\n")
    }

    /// A response head of the gateway's own (errors, health answers).
    static func responseHead(version: HTTPVersion, status: HTTPResponseStatus, headers: HTTPHeaders, into buffer: inout ByteBuffer) {
        Self.statusLine(version: version, code: Int(status.code), into: &buffer)
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        Self.fields(headers, into: &buffer)
        buffer.writeStaticString("\r\n")
    }

    /// The client's response head from a backend's: hop-by-hop fields (and those the
    /// backend's `Connection` names) and `X-Request-Id` are dropped, `Content-Length` too when
    /// the body is re-framed as chunked; the gateway's fields are appended (`Upgrade` only for
    /// a 101 to an upgrade request).
    static func clientResponseHead(
        _ head: UpstreamResponseHead,
        clientVersion: HTTPVersion,
        requestID: String,
        extra: [(name: String, value: String)],
        chunked: Bool,
        connection: String?,
        upgrade: String? = nil,
        into buffer: inout ByteBuffer
    ) {
        Self.statusLine(version: clientVersion, code: head.status, into: &buffer)
        head.bytes.withUnsafeReadableBytes { raw in
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[head.reason]))
            buffer.writeStaticString("\r\n")
            let namesConnectionFields = head.fields.contains { $0.kind == .connection }
            for field in head.fields {
                switch field.kind {
                case .hopByHop, .connection, .transferEncoding, .requestID:
                    continue
                case .contentLength:
                    if chunked { continue }
                case .other:
                    if namesConnectionFields, Self.isNamedByConnection(field, in: head, raw) { continue }
                }
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[field.nameStart..<field.nameEnd]))
                buffer.writeStaticString(": ")
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[field.valueStart..<field.valueEnd]))
                buffer.writeStaticString("\r\n")
            }
        }
        buffer.writeStaticString("X-Request-Id: ")
        buffer.writeString(requestID)
        buffer.writeStaticString("\r\n")
        for (name, value) in extra { Self.field(name, value, into: &buffer) }
        if chunked { buffer.writeStaticString("Transfer-Encoding: chunked\r\n") }
        if let connection { Self.field("Connection", connection, into: &buffer) }
        if let upgrade { Self.field("Upgrade", upgrade, into: &buffer) }
        buffer.writeStaticString("\r\n")
    }

    /// One chunk of a chunked body: size line, data, CRLF.
    static func chunk(_ data: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: data.readableBytes + 20)
        buffer.writeString(String(data.readableBytes, radix: 16))
        buffer.writeStaticString("\r\n")
        buffer.writeImmutableBuffer(data)
        buffer.writeStaticString("\r\n")
        return buffer
    }

    private static func isNamedByConnection(_ field: HeaderField, in head: UpstreamResponseHead, _ raw: UnsafeRawBufferPointer) -> Bool {
        head.fields.contains { connection in
            connection.kind == .connection
                && HeaderNames.listContains(raw, connection.valueStart, connection.valueEnd, nameStart: field.nameStart, nameEnd: field.nameEnd)
        }
    }

    private static func statusLine(version: HTTPVersion, code: Int, into buffer: inout ByteBuffer) {
        buffer.writeStaticString(version == .http1_0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code / 100 % 10))
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code / 10 % 10))
        buffer.writeInteger(UInt8(ascii: "0") + UInt8(code % 10))
        buffer.writeStaticString(" ")
    }

    private static func fields(_ headers: HTTPHeaders, into buffer: inout ByteBuffer) {
        for (name, value) in headers { Self.field(name, value, into: &buffer) }
    }

    @inline(__always)
    private static func field(_ name: String, _ value: String, into buffer: inout ByteBuffer) {
        buffer.writeString(name)
        buffer.writeStaticString(": ")
        buffer.writeString(value)
        buffer.writeStaticString("\r\n")
    }
}
