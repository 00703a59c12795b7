import Foundation

import AuthGatewayTesting
@testable import AuthGateway

/// A response read off a raw connection: what the server wrote, nothing normalized.
struct RawResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    var text: String { String(decoding: self.body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// A problem+json answer's `type` without its `urn:auth-gateway:problem:` prefix.
    var problem: String? {
        guard let type = (try? JSONValue(parsing: self.text))?["type"]?.stringValue else { return nil }
        return type.hasPrefix("urn:auth-gateway:problem:") ? String(type.dropFirst(25)) : type
    }
}

/// One HTTP/1.1 request written byte for byte on a fresh connection (`RawConnection`), so that
/// no client library normalizes its target or its `Host` first, and the response parsed from
/// the bytes received.
enum RawExchange {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `GET <target> HTTP/1.1` with `Host` (when given), the extra fields and `Connection: close`.
    static func get(_ target: [UInt8], host: [UInt8]?, headers: [(String, String)] = []) -> [UInt8] {
        var bytes = Array("GET ".utf8) + target + Array(" HTTP/1.1\r\n".utf8)
        if let host { bytes += Array("Host: ".utf8) + host + Array("\r\n".utf8) }
        for (name, value) in headers { bytes += Array("\(name): \(value)\r\n".utf8) }
        bytes += Array("Connection: close\r\n\r\n".utf8)
        return bytes
    }

    /// Sends `request` to 127.0.0.1:`port` and reads one response: complete by its
    /// `Content-Length`, its last chunk, or the server closing (status 0 when it closed without
    /// one). Polled every 5 ms, bounded by `timeout` (only a failing run waits that long).
    static func send(port: Int, _ request: [UInt8], timeout: Duration = .seconds(30)) async throws -> RawResponse {
        let connection = try await RawConnection.connect(port: port)
        return try await withCleanup({ await connection.close() }) { () async throws -> RawResponse in
            try await connection.send(bytes: request)
            let deadline = ContinuousClock.now + timeout
            while true {
                let closed = connection.isClosed
                let bytes = connection.receivedBytes
                if let response = Self.parse(bytes, closed: closed) { return response }
                // Closed without a response: status 0 (some servers hang up on what they cannot parse).
                if closed { return RawResponse(status: 0, headers: [], body: bytes) }
                guard ContinuousClock.now < deadline else {
                    throw Failure(description: "port \(port): no whole response within \(timeout)")
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// The response in `bytes`, once it is whole (nil before).
    static func parse(_ bytes: [UInt8], closed: Bool) -> RawResponse? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = Self.find(separator, in: bytes, from: 0) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let statusParts = statusLine.split(separator: " ")
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            return closed ? RawResponse(status: 0, headers: [], body: Array(bytes)) : nil
        }
        let headers: [(name: String, value: String)] = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (
                String(line[..<colon]),
                String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            )
        }
        let rest = Array(bytes[(headEnd + 4)...])
        func value(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        if let length = value("content-length").flatMap({ Int($0) }) {
            guard rest.count >= length else { return nil }
            return RawResponse(status: status, headers: headers, body: Array(rest.prefix(length)))
        }
        if value("transfer-encoding")?.lowercased() == "chunked" {
            guard let body = Self.dechunk(rest) else {
                return closed ? RawResponse(status: status, headers: headers, body: rest) : nil
            }
            return RawResponse(status: status, headers: headers, body: body)
        }
        if status == 204 || status == 304 || (100..<200).contains(status) {
            return RawResponse(status: status, headers: headers, body: [])
        }
        // Delimited by the close.
        return closed ? RawResponse(status: status, headers: headers, body: rest) : nil
    }

    /// A whole chunked body, decoded; nil while its last chunk has not arrived.
    private static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
        var body: [UInt8] = []
        var index = 0
        while true {
            guard let lineEnd = Self.find([13, 10], in: bytes, from: index) else { return nil }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            let start = lineEnd + 2
            if size == 0 { return body }
            guard bytes.count >= start + size + 2 else { return nil }
            body += bytes[start..<(start + size)]
            index = start + size + 2
        }
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0] && Array(bytes[index..<(index + needle.count)]) == needle { return index }
            index += 1
        }
        return nil
    }

    /// `items` through `body`, at most `width` at once, the results in the items' order.
    static func map<Item: Sendable, Result: Sendable>(
        _ items: [Item], width: Int = 6, _ body: @escaping @Sendable (Item) async throws -> Result
    ) async throws -> [Result] {
        try await withThrowingTaskGroup(of: (Int, Result).self) { group in
            var results = [Result?](repeating: nil, count: items.count)
            var next = 0
            while next < min(width, items.count) {
                let index = next
                group.addTask { (index, try await body(items[index])) }
                next += 1
            }
            while let (index, result) = try await group.next() {
                results[index] = result
                if next < items.count {
                    let index = next
                    group.addTask { (index, try await body(items[index])) }
                    next += 1
                }
            }
            return results.map { $0! }
        }
    }

    /// Bytes as a readable spelling: visible ASCII as it is, anything else `\xNN`.
    static func show(_ bytes: [UInt8]) -> String {
        bytes.map { $0 > 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : String(format: "\\x%02X", $0) }.joined()
    }
}
