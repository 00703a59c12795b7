// The lean proxy floor: the least an *authenticating* HTTP/1.1 reverse proxy on SwiftNIO does
// per request, written directly on the bytes it read (docs/benchmarks.md, "the lean proxy
// floor"). It sits between `nio-relay-floor` (no HTTP at all) and the gateway: what the
// gateway's request path would cost if it did only its irreducible work, with no `String` per
// field, no header collection, no per-request allocation it can avoid.
//
// Per request, beyond the relay floor:
// - the request head is split and checked (CRLF lines, token names, value bytes eight at a
//   time), its request line checked (method token, target, HTTP/1.1); a body framed by
//   `Content-Length` is relayed as it arrives, counted to its end (chunked ones are refused);
// - the `Authorization: Bearer` token is looked up in a per-loop memo keyed by its bytes (a
//   hash, then a byte comparison) and its expiry checked against the clock: a verified-token
//   cache hit, the memo filled at start-up from TOKEN_FILE (no signature check here: the gateway
//   does not verify a cached token either);
// - `Host` is required; the route is a path-prefix match;
// - the backend's head is written in one pass into one buffer: the request line, the fields
//   less hop-by-hop ones, client-supplied `X-Forwarded-*`, `X-User-*`, `X-Auth-*` and
//   `X-Request-Id`, plus `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host` and a new
//   `X-Request-Id`;
// - the backend's response head is split and checked, framed by `Content-Length`, and
//   written to the client less its hop-by-hop fields, with the request's `X-Request-Id`; the
//   body is relayed as it arrives, counted to its end.
//
// Left out (the gateway does them; each costs something): fields named by `Connection`, a
// pool of backend connections (here one per client connection, opened when it connects),
// chunked bodies, responses without a body to `HEAD` or with 204/304, timers (header, idle
// and response timeouts), identity headers, metrics, logging, graceful drain, configuration
// reloads, HTTP/2. So no authenticating proxy on SwiftNIO does less per request; how close the
// gateway comes to it is the measure (scripts/bench/proxy-floor.sh).
//
//   nio-lean-proxy-floor PORT BACKEND_PORT TOKEN_FILE
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import FloorSupport
import NIOCore
import NIOPosix

let commandLine = FloorCommandLine.parse(program: "nio-lean-proxy-floor", withBackend: true)
let token = commandLine.token

/// A verified token's memo entry: what a cache hit needs (the bench configures no identity
/// headers, so no claims beyond the expiry).
struct Verified {
    let token: [UInt8]
    let expires: Int
}

/// The per-loop token memo, keyed by the token's bytes (hash, then comparison).
final class TokenMemo {
    private var entries: [Int: Verified] = [:]

    func insert(_ entry: Verified) {
        self.entries[entry.token.withUnsafeBytes { Self.hash($0, 0, $0.count) }] = entry
    }

    func lookUp(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, now: Int) -> Verified? {
        guard let entry = self.entries[Self.hash(bytes, start, end)], entry.token.count == end - start,
            entry.expires > now
        else { return nil }
        let same = entry.token.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress! + start, end - start) == 0 }
        return same ? entry : nil
    }

    private static func hash(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        return hasher.finalize()
    }
}

/// The bench token's expiry, read once (the memo is "filled" by a verification done elsewhere).
func expiry(of token: String) -> Int? {
    let parts = token.split(separator: ".")
    guard parts.count == 3 else { return nil }
    var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while payload.count % 4 != 0 { payload += "=" }
    guard let data = Data(base64Encoded: payload),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let expires = object["exp"] as? Int
    else { return nil }
    return expires
}

guard let expires = expiry(of: token) else {
    FileHandle.standardError.write(Data("TOKEN_FILE holds no JWT with an exp claim\n".utf8))
    exit(2)
}
/// One event loop thread, so one memo and one id generator, used only on it.
nonisolated(unsafe) let memo = TokenMemo()
memo.insert(Verified(token: Array(token.utf8), expires: expires))

/// SplitMix64 for request ids, as the gateway's: unique, not secret.
nonisolated(unsafe) var idState = UInt64.random(in: .min ... .max)
let idAlphabet: [UInt8] = Array("0123456789abcdefghijklmnopqrstuv".utf8)

/// Appends a 15-character base32 request id.
func writeRequestID(into buffer: inout ByteBuffer) {
    idState &+= 0x9E37_79B9_7F4A_7C15
    var bits = idState
    bits = (bits ^ (bits >> 30)) &* 0xBF58_476D_1CE4_E5B9
    bits = (bits ^ (bits >> 27)) &* 0x94D0_49BB_1331_11EB
    bits ^= bits >> 31
    buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 15) { out in
        for index in 0..<15 {
            out[index] = idAlphabet[Int(bits & 31)]
            bits >>= 5
        }
        return 15
    }
}

let httpVersion: [UInt8] = Array("HTTP/1.1".utf8)
let unauthorized = ByteBuffer(string: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
let unauthorizedClose = ByteBuffer(
    string: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
let badRequest = ByteBuffer(string: "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

/// The client side: each complete head, checked and authenticated, goes to the backend
/// rewritten; the next waits until the response in flight has ended.
final class ClientSide: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let backendPort: Int
    private var backend: Channel?
    private var context: ChannelHandlerContext?
    private var pending = ByteBuffer()
    private var fields: [LeanField] = []
    private var clientAddress: [UInt8] = []
    private var responseInFlight = false
    /// Request body bytes (framed by `Content-Length`) still to relay to the backend.
    private var requestBodyLeft = 0
    private var backendFlushPending = false
    private var clientFlushPending = false
    /// The id of the request in flight, written into its response head.
    private(set) var requestID = ByteBuffer()

    init(backendPort: Int) { self.backendPort = backendPort }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func channelActive(context: ChannelHandlerContext) {
        self.clientAddress = Array((context.channel.remoteAddress?.ipAddress ?? "").utf8)
        let side = NIOLoopBound(self, eventLoop: context.eventLoop)
        FloorServer.openBackend(for: context, port: self.backendPort, makeHandler: { BackendSide(client: side) }) {
            side.value.backend = $0
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.backend?.close(promise: nil)
        self.context = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = Self.unwrapInboundIn(data)
        self.pending.appendRead(&bytes)
        self.forwardHeads(context: context)
    }

    private func forwardHeads(context: ChannelHandlerContext) {
        guard let backend = self.backend else { return }
        while true {
            if self.requestBodyLeft > 0 {
                guard self.pending.readableBytes > 0 else { break }
                let part = self.pending.readSlice(length: min(self.requestBodyLeft, self.pending.readableBytes))!
                backend.write(part, promise: nil)
                self.backendFlushPending = true
                self.requestBodyLeft -= part.readableBytes
                continue
            }
            guard !self.responseInFlight,
                let length = self.pending.withUnsafeReadableBytes({ LeanHead.headLength(in: $0) })
            else { break }
            let head = self.pending.readSlice(length: length)!
            if !self.forward(head, to: backend, context: context) { return }
        }
        if self.pending.readableBytes == 0 { self.pending.clear() }
    }

    /// Checks, authenticates and rewrites one head; false when the connection is done.
    private func forward(_ head: ByteBuffer, to backend: Channel, context: ChannelHandlerContext) -> Bool {
        var out = backend.allocator.buffer(capacity: head.readableBytes + 160)
        var bodyLength = 0
        let outcome: Int = head.withUnsafeReadableBytes { bytes in
            guard let lineEnd = LeanHead.split(bytes, end: bytes.count, fields: &self.fields),
                let targetStart = Self.checkRequestLine(bytes, lineEnd)
            else { return 400 }
            var host: LeanField?
            var verified: Verified?
            var clientID: LeanField?
            for field in self.fields {
                let (start, end) = (field.nameStart, field.nameEnd)
                if LeanHead.nameIs(bytes, start, end, "host") {
                    guard host == nil else { return 400 }
                    host = field
                } else if LeanHead.nameIs(bytes, start, end, "authorization") {
                    guard field.valueEnd - field.valueStart > 7,
                        LeanHead.nameHasPrefix(bytes, field.valueStart, field.valueEnd, "bearer "),
                        let hit = memo.lookUp(bytes, field.valueStart + 7, field.valueEnd, now: time(nil))
                    else { return 401 }
                    verified = hit
                } else if LeanHead.nameIs(bytes, start, end, "content-length") {
                    guard bodyLength == 0, let value = LeanHead.decimal(bytes, field.valueStart, field.valueEnd)
                    else { return 400 }
                    bodyLength = value
                } else if LeanHead.nameIs(bytes, start, end, "transfer-encoding") {
                    return 400
                } else if LeanHead.nameIs(bytes, start, end, "x-request-id") {
                    clientID = field
                }
            }
            guard let host, verified != nil else { return host == nil ? 400 : 401 }
            // The route: one path-prefix match.
            guard bytes[targetStart] == UInt8(ascii: "/") else { return 400 }
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[0..<(lineEnd + 2)]))
            for field in self.fields {
                let (start, end) = (field.nameStart, field.nameEnd)
                if LeanHead.isHopByHop(bytes, field) || LeanHead.nameHasPrefix(bytes, start, end, "x-forwarded-")
                    || LeanHead.nameHasPrefix(bytes, start, end, "x-user-")
                    || LeanHead.nameHasPrefix(bytes, start, end, "x-auth-")
                    || LeanHead.nameIs(bytes, start, end, "x-request-id")
                {
                    continue
                }
                out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[start..<(field.valueEnd)]))
                out.writeStaticString("\r\n")
            }
            out.writeStaticString("X-Forwarded-For: ")
            out.writeBytes(self.clientAddress)
            out.writeStaticString("\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: ")
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[host.valueStart..<host.valueEnd]))
            out.writeStaticString("\r\nX-Request-Id: ")
            self.requestID.clear()
            if let clientID, clientID.valueEnd > clientID.valueStart, clientID.valueEnd - clientID.valueStart <= 128 {
                self.requestID.writeBytes(
                    UnsafeRawBufferPointer(rebasing: bytes[clientID.valueStart..<clientID.valueEnd]))
            } else {
                writeRequestID(into: &self.requestID)
            }
            out.writeImmutableBuffer(self.requestID)
            out.writeStaticString("\r\n\r\n")
            return 200
        }
        switch outcome {
        case 200:
            self.responseInFlight = true
            self.requestBodyLeft = bodyLength
            backend.write(out, promise: nil)
            self.backendFlushPending = true
            return true
        case 401 where bodyLength == 0:
            context.write(Self.wrapOutboundOut(unauthorized), promise: nil)
            self.clientFlushPending = true
            return true
        default:
            let client = context.channel
            context.writeAndFlush(Self.wrapOutboundOut(outcome == 401 ? unauthorizedClose : badRequest)).whenComplete {
                _ in client.close(promise: nil)
            }
            self.pending.clear()
            return false
        }
    }

    /// `method SP target SP HTTP/1.1`: the target's start, or nil.
    private static func checkRequestLine(_ bytes: UnsafeRawBufferPointer, _ end: Int) -> Int? {
        var index = 0
        while index < end, bytes[index] != 0x20 {
            guard LeanHead.isTokenByte(bytes[index]) else { return nil }
            index += 1
        }
        guard index > 0, index < end else { return nil }
        let targetStart = index + 1
        index = targetStart
        while index < end, bytes[index] > 0x20, bytes[index] < 0x7F { index += 1 }
        guard index > targetStart, index + 9 == end, bytes[index] == 0x20,
            memcmp(bytes.baseAddress! + index + 1, httpVersion, 8) == 0
        else { return nil }
        return targetStart
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.backendFlushPending {
            self.backendFlushPending = false
            self.backend?.flush()
        }
        if self.clientFlushPending {
            self.clientFlushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    // The backend side's calls, on the same loop.

    func writeToClient(_ bytes: ByteBuffer) {
        self.context?.write(Self.wrapOutboundOut(bytes), promise: nil)
    }

    func flushClient() { self.context?.flush() }

    func responseEnded() {
        self.responseInFlight = false
        guard let context = self.context, self.pending.readableBytes > 0 else { return }
        self.forwardHeads(context: context)
        if self.backendFlushPending {
            self.backendFlushPending = false
            self.backend?.flush()
        }
    }

    func closeClient() { self.context?.close(promise: nil) }
}

/// The backend side: each response head checked and rewritten for the client, its body
/// relayed to its `Content-Length`.
final class BackendSide: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let client: NIOLoopBound<ClientSide>
    private var pending = ByteBuffer()
    private var fields: [LeanField] = []
    /// Body bytes still to come; nil while waiting for a head.
    private var bodyLeft: Int?
    private var flushPending = false

    init(client: NIOLoopBound<ClientSide>) { self.client = client }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = Self.unwrapInboundIn(data)
        self.pending.appendRead(&bytes)
        let client = self.client.value
        while self.pending.readableBytes > 0 {
            if let left = self.bodyLeft {
                let part = self.pending.readSlice(length: min(left, self.pending.readableBytes))!
                client.writeToClient(part)
                self.flushPending = true
                self.bodyLeft = left - part.readableBytes
                if self.bodyLeft == 0 {
                    self.bodyLeft = nil
                    client.responseEnded()
                }
                continue
            }
            guard let length = self.pending.withUnsafeReadableBytes({ LeanHead.headLength(in: $0) }) else { break }
            let head = self.pending.readSlice(length: length)!
            guard let (out, bodyLength) = self.clientHead(head, requestID: client.requestID, context: context) else {
                client.closeClient()
                context.close(promise: nil)
                return
            }
            client.writeToClient(out)
            self.flushPending = true
            if bodyLength == 0 {
                client.responseEnded()
            } else {
                self.bodyLeft = bodyLength
            }
        }
        if self.pending.readableBytes == 0 { self.pending.clear() }
    }

    /// The client's head and the body's length; nil for a response this floor does not frame.
    private func clientHead(
        _ head: ByteBuffer, requestID: ByteBuffer, context: ChannelHandlerContext
    ) -> (ByteBuffer, Int)? {
        var out = context.channel.allocator.buffer(capacity: head.readableBytes + 48)
        let length: Int? = head.withUnsafeReadableBytes { bytes in
            guard let lineEnd = LeanHead.split(bytes, end: bytes.count, fields: &self.fields), lineEnd >= 12,
                LeanHead.nameHasPrefix(bytes, 0, lineEnd, "http/1.1 ")
            else { return nil }
            var bodyLength: Int?
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[0..<(lineEnd + 2)]))
            for field in self.fields {
                let (start, end) = (field.nameStart, field.nameEnd)
                if LeanHead.nameIs(bytes, start, end, "content-length") {
                    guard bodyLength == nil, let value = LeanHead.decimal(bytes, field.valueStart, field.valueEnd)
                    else { return nil }
                    bodyLength = value
                } else if LeanHead.nameIs(bytes, start, end, "transfer-encoding") {
                    return nil
                }
                if LeanHead.isHopByHop(bytes, field) || LeanHead.nameIs(bytes, start, end, "x-request-id") { continue }
                out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[start..<field.valueEnd]))
                out.writeStaticString("\r\n")
            }
            out.writeStaticString("X-Request-Id: ")
            out.writeImmutableBuffer(requestID)
            out.writeStaticString("\r\n\r\n")
            return bodyLength
        }
        return length.map { (out, $0) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.flushPending {
            self.flushPending = false
            self.client.value.flushClient()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.client.value.closeClient()
        context.fireChannelInactive()
    }
}

try FloorServer.serve(
    program: "nio-lean-proxy-floor", port: commandLine.port, detail: ", backend 127.0.0.1:\(commandLine.backendPort)"
) { ClientSide(backendPort: commandLine.backendPort) }
