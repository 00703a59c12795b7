import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One line per finished request, as JSON, on standard output.
///
/// Each event loop buffers its own lines and writes them in batches (at 32 KiB, and at least
/// every `flushInterval`), so logging costs one `write(2)` per batch instead of a locked write
/// per request. No token, cookie or query string is ever part of a line.
final class AccessLog {
    struct Entry {
        var requestID: String
        var method: String
        var path: String
        var wireProtocol: ClientProtocol
        var route: String?
        var status: Int
        var durationSeconds: Double
        var client: String
        var backend: String?
        var subject: String?
        /// The API key's `id` (never the key) when the caller presented one.
        var apiKey: String? = nil
        var errorType: String?
        var bytesIn: Int
        var bytesOut: Int
        /// The W3C trace id when the request was traced.
        var traceID: String? = nil
        /// The rate limit that refused the request (docs/rate-limits.md).
        var rateLimit: String? = nil
        /// An authorizer decision (docs/authorizer.md): `"mode":"authorizer"`.
        var authorizer = false
    }

    private let enabled: Bool
    private let fileDescriptor: Int32
    private var buffer: [UInt8] = []
    private static let flushThreshold = 32 * 1024

    init(enabled: Bool, fileDescriptor: Int32 = 1) {
        self.enabled = enabled
        self.fileDescriptor = fileDescriptor
        if enabled { self.buffer.reserveCapacity(Self.flushThreshold + 1024) }
    }

    var isEnabled: Bool { self.enabled }

    func record(_ entry: Entry, timestamp: Double) {
        guard self.enabled else { return }
        var line = "{\"ts\":\(Self.format(timestamp)),\"requestId\":"
        JSONValue.writeString(entry.requestID, to: &line)
        line += ",\"method\":"
        JSONValue.writeString(entry.method, to: &line)
        line += ",\"path\":"
        JSONValue.writeString(entry.path, to: &line)
        line += ",\"protocol\":\"\(entry.wireProtocol.rawValue)\""
        line += ",\"route\":"
        if let route = entry.route { JSONValue.writeString(route, to: &line) } else { line += "null" }
        line += ",\"status\":\(entry.status),\"durationMs\":\(Self.format(entry.durationSeconds * 1000)),\"client\":"
        JSONValue.writeString(entry.client, to: &line)
        if let backend = entry.backend {
            line += ",\"backend\":"
            JSONValue.writeString(backend, to: &line)
        }
        if let subject = entry.subject {
            line += ",\"sub\":"
            JSONValue.writeString(subject, to: &line)
        }
        if let apiKey = entry.apiKey {
            line += ",\"apiKey\":"
            JSONValue.writeString(apiKey, to: &line)
        }
        if let errorType = entry.errorType {
            line += ",\"error\":"
            JSONValue.writeString(errorType, to: &line)
        }
        line += ",\"bytesIn\":\(entry.bytesIn),\"bytesOut\":\(entry.bytesOut)"
        if let traceID = entry.traceID { line += ",\"traceId\":\"\(traceID)\"" }
        if let rateLimit = entry.rateLimit {
            line += ",\"rateLimit\":"
            JSONValue.writeString(rateLimit, to: &line)
        }
        if entry.authorizer { line += ",\"mode\":\"authorizer\"" }
        line += "}\n"
        self.buffer.append(contentsOf: line.utf8)
        if self.buffer.count >= Self.flushThreshold { self.flush() }
    }

    /// Writes out buffered lines. Called by the loop's periodic timer and at shutdown.
    func flush() {
        guard !self.buffer.isEmpty else { return }
        self.buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(self.fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    break  // stdout closed or full: drop the batch rather than block or crash
                }
            }
        }
        self.buffer.removeAll(keepingCapacity: true)
    }

    static func format(_ value: Double) -> String {
        let millis = (value * 1000).rounded() / 1000
        return String(millis)
    }
}

@available(*, unavailable)
extension AccessLog: Sendable {}
