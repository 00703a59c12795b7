import NIOCore
import NIOHTTP1

/// A backend's response head as an HTTP/1.1 client gets it: the server side's writer, apart
/// from the codec because it takes the upstream's head (`UpstreamResponseHead`).
extension HTTPWriter {
    /// The client's response head from a backend's, HTTP/1.1 or HTTP/2: hop-by-hop fields (and
    /// those the backend's `Connection` names) and `X-Request-Id` are dropped, `Content-Length`
    /// too when the body is re-framed as chunked; the gateway's fields are appended (`Upgrade`
    /// only for a 101 to an upgrade request). An HTTP/1.1 backend's kept fields are copied as
    /// bytes, with its reason phrase; an HTTP/2 backend's go as they came, lower-case, with an
    /// empty reason phrase (HTTP/2 has none).
    static func clientResponseHead(
        _ head: UpstreamResponseHead,
        clientVersion: HTTPVersion,
        requestID: String,
        extra: HeaderFields,
        chunked: Bool,
        connection: String?,
        upgrade: String? = nil,
        dropsCORSFields: Bool = false,
        into buffer: inout ByteBuffer
    ) {
        // One copy into memory sized for the worst case (like `requestHead`): every field of
        // the backend's head kept, each with at most one byte more (": " after a bare colon).
        var bound = 13 + head.estimatedBytes + 16 + requestID.utf8.count + 30
        if case .http1(let head) = head { bound += head.fields.count }
        for (name, value) in extra { bound += name.utf8.count + value.utf8.count + 4 }
        if let connection { bound += 14 + connection.utf8.count }
        if let upgrade { bound += 11 + upgrade.utf8.count }
        func write(backendFields: (inout RawOutput) -> Void) {
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: bound) { memory in
                var output = RawOutput(memory)
                Self.statusLine(version: clientVersion, code: head.status, into: &output)
                backendFields(&output)
                output.append("X-Request-Id: ")
                output.append(requestID)
                output.append("\r\n")
                for (name, value) in extra { output.field(name, value) }
                if chunked { output.append("Transfer-Encoding: chunked\r\n") }
                if let connection { output.field("Connection", connection) }
                if let upgrade { output.field("Upgrade", upgrade) }
                output.append("\r\n")
                return output.count
            }
        }
        switch head {
        case .http1(let head):
            write { output in
                head.bytes.withUnsafeReadableBytes { raw in
                    output.append(UnsafeRawBufferPointer(rebasing: raw[head.reason]))
                    output.append("\r\n")
                }
                head.forEachEndToEndField { field, raw in
                    if chunked && field.kind == .contentLength { return }
                    // The gateway answers CORS for this route: the backend's own fields would
                    // double its `Access-Control-Allow-Origin` (docs/policies.md, "CORS").
                    if dropsCORSFields
                        && Self.isCORSName(UnsafeRawBufferPointer(rebasing: raw[field.nameStart..<field.nameEnd]))
                    {
                        return
                    }
                    output.append(UnsafeRawBufferPointer(rebasing: raw[field.nameStart..<field.nameEnd]))
                    output.append(": ")
                    output.append(UnsafeRawBufferPointer(rebasing: raw[field.valueStart..<field.valueEnd]))
                    output.append("\r\n")
                }
            }
        case .http2(let head):
            // Already without the connection-specific fields and `x-request-id`
            // (`HTTP2ResponseHead`).
            write { output in
                output.append("\r\n")
                for (name, value, _) in head.fields {
                    if chunked && name == "content-length" { continue }
                    if dropsCORSFields && name.hasPrefix("access-control-") { continue }
                    output.field(name, value)
                }
            }
        }
    }

    /// `Access-Control-…`, in any case.
    private static func isCORSName(_ name: UnsafeRawBufferPointer) -> Bool {
        let prefix = "access-control-".utf8
        guard name.count >= prefix.count else { return false }
        for (byte, expected) in zip(name, prefix) where byte | 0x20 != expected && byte != expected { return false }
        return true
    }
}
