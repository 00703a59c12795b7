import NIOCore
import NIOHTTP1

/// The request head a backend gets, not yet encoded: the method, the backend's target, the
/// client's fields and what the gateway changes in them (`HeaderRewrite`).
///
/// Kept in this form until the lease writes it, so that an HTTP/1.1 backend's head goes from
/// the client's fields into its buffer in one pass (`HTTPWriter.requestHead`), without a
/// rewritten header list and a second `HTTPRequestHead` in between (two allocations and a
/// copy of every field per request; docs/benchmarks.md). An HTTP/2 backend takes it as NIO's
/// type (`httpRequestHead`), built when asked.
struct UpstreamRequestHead {
    let version: HTTPVersion
    let method: HTTPMethod
    let uri: String
    /// The client's fields, changed by `rewrite` as they are written; as they are without one.
    let fields: HTTPHeaders
    let rewrite: HeaderRewrite?

    /// A forwarded request: the client's `fields` as `rewrite` changes them, over HTTP/1.1.
    init(method: HTTPMethod, uri: String, clientFields: HTTPHeaders, rewrite: HeaderRewrite) {
        self.version = .http1_1
        self.method = method
        self.uri = uri
        self.fields = clientFields
        self.rewrite = rewrite
    }

    /// A head that goes as it is (the gateway's own calls, local endpoints).
    init(_ head: HTTPRequestHead) {
        self.version = head.version
        self.method = head.method
        self.uri = head.uri
        self.fields = head.headers
        self.rewrite = nil
    }

    /// Hands the head's fields, rewritten, to `sink` in order.
    func writeFields<Sink: HeaderFieldSink>(into sink: inout Sink) {
        if let rewrite = self.rewrite {
            HeaderRewriter.rewrite(self.fields, rewrite, into: &sink)
        } else {
            for (name, value) in self.fields { sink.appendField(name, value) }
        }
    }

    /// The same head as NIO's type: an HTTP/2 backend's (HPACK), and tests.
    var httpRequestHead: HTTPRequestHead {
        guard let rewrite = self.rewrite else {
            return HTTPRequestHead(version: self.version, method: self.method, uri: self.uri, headers: self.fields)
        }
        return HTTPRequestHead(
            version: self.version, method: self.method, uri: self.uri,
            headers: HeaderRewriter.upstreamRequestHeaders(self.fields, rewrite))
    }

    /// About the bytes of the head as HTTP/1.1, at least as many as usual: its buffer is sized
    /// once from it (a longer head only makes the buffer grow).
    var estimatedBytes: Int {
        var bytes = self.method.rawValue.utf8.count + self.uri.utf8.count + 14  // " ", " HTTP/1.1\r\n", "\r\n"
        for (name, value) in self.fields { bytes += name.utf8.count + value.utf8.count + 4 }
        guard let rewrite = self.rewrite else { return bytes }
        // X-Forwarded-For/-Proto/-Host and X-Request-Id with their values; then what is added.
        bytes += 80 + rewrite.connection.peerIP.utf8.count + rewrite.requestID.utf8.count
        for field in rewrite.identity { bytes += field.name.utf8.count + field.value.utf8.count + 4 }
        for field in rewrite.traceContext { bytes += field.name.utf8.count + field.value.utf8.count + 4 }
        for edit in rewrite.tokenEdits { bytes += (edit.replacement?.utf8.count ?? 0) + 24 }
        return bytes
    }
}

extension HTTPWriter {
    /// A request head for a backend, in one pass: the request line, then each field as the
    /// gateway's rewrite keeps, changes or adds it (`UpstreamRequestHead.writeFields`). Usually
    /// all of it in one step, into memory reserved from `estimatedBytes` (a `ByteBuffer` write
    /// per field, each checking capacity and uniqueness, was ~1.4 % of a proxied request's CPU:
    /// perf); a head that does not fit there (a field the estimate does not foresee, such as a
    /// long `Host` repeated as `X-Forwarded-Host`) is written again field by field, growing the
    /// buffer. The estimate sizes memory; it never bounds a write.
    /// `estimatedBytes`: the head's, when the caller has it already.
    static func requestHead(_ head: UpstreamRequestHead, estimatedBytes: Int? = nil, into buffer: inout ByteBuffer) {
        let method = head.method.rawValue
        let version: StaticString = head.version == .http1_0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n"
        let lineBytes = method.utf8.count + 1 + head.uri.utf8.count + version.utf8CodeUnitCount
        let reserved = max(estimatedBytes ?? head.estimatedBytes, lineBytes + 2)
        var fitted = false
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: reserved) { memory in
            var fields = FittingFields(RawOutput(memory))
            guard fields.fits(lineBytes) else { return 0 }
            fields.output.append(method)
            fields.output.append(" ")
            fields.output.append(head.uri)
            fields.output.append(version)
            head.writeFields(into: &fields)
            guard fields.fits(2) else { return 0 }
            fields.output.append("\r\n")
            fitted = true
            return fields.output.count
        }
        guard !fitted else { return }
        buffer.writeString(method)
        buffer.writeStaticString(" ")
        buffer.writeString(head.uri)
        buffer.writeStaticString(version)
        head.writeFields(into: &buffer)
        buffer.writeStaticString("\r\n")
    }
}

/// Fields written into reserved memory while they fit; the first that does not stops the
/// writing for good (`fits` is false from then on) and the caller starts over.
private struct FittingFields: HeaderFieldSink {
    var output: RawOutput
    private var overflowed = false

    init(_ output: RawOutput) { self.output = output }

    /// Whether `bytes` more fit, and every field before them did.
    mutating func fits(_ bytes: Int) -> Bool {
        if !self.overflowed && bytes > self.output.remaining { self.overflowed = true }
        return !self.overflowed
    }

    mutating func appendField(_ name: String, _ value: String) {
        guard self.fits(name.utf8.count + value.utf8.count + 4) else { return }
        self.output.field(name, value)
    }
}

extension ByteBuffer: HeaderFieldSink {
    mutating func appendField(_ name: String, _ value: String) {
        HTTPWriter.field(name, value, into: &self)
    }
}
