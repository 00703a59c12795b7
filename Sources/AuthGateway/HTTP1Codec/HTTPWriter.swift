import NIOCore
import NIOHTTP1

/// Writes HTTP/1.1 messages as bytes: request heads for backends, the gateway's own response
/// heads, chunk framing (a backend's response head for a client: `HTTPWriter+ClientResponse`;
/// a backend's request head: `UpstreamRequestHead`).
///
/// No validation happens here: every name and value written was either checked by the parser
/// (`HeadScanner`) or where it entered the gateway (identity values, refreshed tokens,
/// configuration).
enum HTTPWriter {
    static let continueResponse: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
    static let lastChunk: StaticString = "0\r\n\r\n"

    /// A response head of the gateway's own (errors, health answers).
    static func responseHead(
        version: HTTPVersion, status: HTTPResponseStatus, headers: HTTPHeaders, into buffer: inout ByteBuffer
    ) {
        Self.statusLine(version: version, code: Int(status.code), into: &buffer)
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        Self.fields(headers, into: &buffer)
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

    private static func statusLine(version: HTTPVersion, code: Int, into buffer: inout ByteBuffer) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 13) { memory in
            var output = RawOutput(memory)
            Self.statusLine(version: version, code: code, into: &output)
            return output.count
        }
    }

    /// `HTTP/1.x NNN ` (13 bytes).
    static func statusLine(version: HTTPVersion, code: Int, into output: inout RawOutput) {
        output.append(version == .http1_0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        output.append(byte: UInt8(ascii: "0") + UInt8(code / 100 % 10))
        output.append(byte: UInt8(ascii: "0") + UInt8(code / 10 % 10))
        output.append(byte: UInt8(ascii: "0") + UInt8(code % 10))
        output.append(" ")
    }

    /// Each `name: value` line copied in one step.
    static func fields(_ headers: HTTPHeaders, into buffer: inout ByteBuffer) {
        for (name, value) in headers { Self.field(name, value, into: &buffer) }
    }

    /// `name: value` CRLF, copied in one step.
    static func field(_ name: String, _ value: String, into buffer: inout ByteBuffer) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: name.utf8.count + value.utf8.count + 4) { memory in
            var output = RawOutput(memory)
            output.field(name, value)
            return output.count
        }
    }
}

/// Appends bytes to memory sized beforehand (`HTTPWriter.requestHead` and
/// `clientResponseHead`). Every append checks the bound (a compare per append): a sizing
/// mistake stops the process instead of writing past the buffer.
struct RawOutput {
    private let memory: UnsafeMutableRawBufferPointer
    private(set) var count = 0

    init(_ memory: UnsafeMutableRawBufferPointer) { self.memory = memory }

    /// Bytes left in the memory.
    var remaining: Int { self.memory.count - self.count }

    @inline(__always)
    mutating func append(_ text: String) {
        // Native and small strings (all of the gateway's) lend their bytes as they are;
        // `withUTF8` would need a mutable copy, a retain and a release per field.
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            self.append(UnsafeRawBufferPointer(bytes))
        }
        if copied == nil {
            var text = text
            text.withUTF8 { bytes in self.append(UnsafeRawBufferPointer(bytes)) }
        }
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= self.memory.count - self.count, "head larger than its computed size")
        UnsafeMutableRawBufferPointer(rebasing: self.memory[self.count...]).copyMemory(from: bytes)
        self.count += bytes.count
    }

    @inline(__always)
    mutating func append(byte: UInt8) {
        precondition(self.count < self.memory.count, "head larger than its computed size")
        self.memory[self.count] = byte
        self.count += 1
    }

    /// `name: value` CRLF
    @inline(__always)
    mutating func field(_ name: String, _ value: String) {
        self.append(name)
        self.append(": ")
        self.append(value)
        self.append("\r\n")
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        self.append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
