/// Where the frames of one direction of a WebSocket tunnel begin and end (RFC 6455 §5.2), so
/// that the gateway can put a close frame of its own between two frames — never inside one —
/// when it ends the tunnel (docs/streams.md). Reads only the frame headers (2 to 14 bytes) and
/// skips the payloads by their length: nothing is unmasked, copied or kept, except a header
/// split between two reads (at most 13 bytes). Pure.
struct WebSocketFrameBoundary: Equatable {
    private enum State: Equatable {
        /// Between frames, or inside a header: the header bytes read so far (empty between
        /// frames; only a header split between reads is kept).
        case header([UInt8])
        /// Inside a payload: the bytes left.
        case payload(UInt64)
    }

    private var state = State.header([])

    /// Between two frames: a frame of the gateway's own may go here.
    var atBoundary: Bool { self.state == .header([]) }

    /// Reads `bytes` (the next bytes of the direction). With `stoppingAtFrameEnd`, stops right
    /// after the first frame that ends in them and returns how many bytes that was (the
    /// direction is then at a boundary); else reads them all. nil when no frame ended (or not
    /// stopping).
    mutating func advance(over bytes: UnsafeRawBufferPointer, stoppingAtFrameEnd: Bool = false) -> Int? {
        var index = 0
        let count = bytes.count
        while index < count {
            switch self.state {
            case .payload(let remaining):
                let taken = min(remaining, UInt64(count - index))
                index += Int(taken)
                if taken == remaining {
                    self.state = .header([])
                    if stoppingAtFrameEnd { return index }
                } else {
                    self.state = .payload(remaining - taken)
                }
            case .header(let pending) where pending.isEmpty:
                // The usual case: the whole header is in this read.
                let available = UnsafeRawBufferPointer(rebasing: bytes[index...])
                if let (headerLength, payloadLength) = Self.header(available) {
                    index += headerLength
                    self.state = payloadLength == 0 ? .header([]) : .payload(payloadLength)
                    if payloadLength == 0, stoppingAtFrameEnd { return index }
                } else {
                    self.state = .header(Array(available))
                    index = count
                }
            case .header(var pending):
                pending.append(bytes[index])
                index += 1
                if let (headerLength, payloadLength) = pending.withUnsafeBytes(Self.header) {
                    precondition(headerLength == pending.count)
                    self.state = payloadLength == 0 ? .header([]) : .payload(payloadLength)
                    if payloadLength == 0, stoppingAtFrameEnd { return index }
                } else {
                    self.state = .header(pending)
                }
            }
        }
        return nil
    }

    /// The length of the frame header at the start of `bytes` and of its payload, when the
    /// whole header is there.
    static func header(_ bytes: UnsafeRawBufferPointer) -> (header: Int, payload: UInt64)? {
        guard bytes.count >= 2 else { return nil }
        let second = bytes[1]
        let masked = second & 0x80 != 0
        let short = UInt64(second & 0x7F)
        let extended = short == 126 ? 2 : short == 127 ? 8 : 0
        let headerLength = 2 + extended + (masked ? 4 : 0)
        guard bytes.count >= headerLength else { return nil }
        var payload = short
        if extended > 0 {
            payload = 0
            for offset in 0..<extended { payload = payload << 8 | UInt64(bytes[2 + offset]) }
        }
        return (headerLength, payload)
    }
}

/// A WebSocket close frame (RFC 6455 §5.5.1) with a status code and a reason, as the gateway
/// sends it when it ends a tunnel: unmasked towards the client (a server's frame), masked
/// towards the backend (a client's frame must be, §5.3).
enum WebSocketCloseFrame {
    /// 1008: the endpoint received a message that violates its policy (§7.4.1) — the
    /// credential that opened the tunnel no longer holds.
    static let policyViolation: UInt16 = 1008

    static func toClient(code: UInt16, reason: String) -> [UInt8] {
        let payload = Self.payload(code: code, reason: reason)
        return [0x88, UInt8(payload.count)] + payload
    }

    /// `mask`: four bytes from a strong random source (§5.3).
    static func toServer(code: UInt16, reason: String, mask: [UInt8]) -> [UInt8] {
        precondition(mask.count == 4)
        let payload = Self.payload(code: code, reason: reason)
        var frame: [UInt8] = [0x88, 0x80 | UInt8(payload.count)] + mask
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index % 4]) }
        return frame
    }

    /// The code in network order, then the reason in UTF-8, cut to fit a control frame's 125
    /// bytes.
    private static func payload(code: UInt16, reason: String) -> [UInt8] {
        [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(123))
    }
}
