import NIOCore
import Testing

@testable import AuthGateway

/// The WebSocket framing the gateway reads and writes when it ends a tunnel (docs/streams.md):
/// frame boundaries, close frames, and where each direction's close frame goes.
@Suite("WebSocket frames")
struct WebSocketFramesTests {
    /// A frame: `payload` bytes, masked when `masked` (the mask key is all zeros' opposite).
    static func frame(_ payload: Int, masked: Bool, opcode: UInt8 = 0x2) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload < 126 {
            bytes.append(maskBit | UInt8(payload))
        } else if payload <= 0xFFFF {
            bytes += [maskBit | 126, UInt8(payload >> 8), UInt8(payload & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8((UInt64(payload) >> UInt64(shift)) & 0xFF))
            }
        }
        if masked { bytes += [1, 2, 3, 4] }
        return bytes + [UInt8](repeating: 0x61, count: payload)
    }

    @Test("frames of every length form, masked or not, split anywhere, end where they end")
    func boundaries() {
        let frames = [
            Self.frame(0, masked: true), Self.frame(5, masked: false), Self.frame(300, masked: true),
            Self.frame(70_000, masked: false),
        ]
        let stream = frames.flatMap { $0 }
        let ends = frames.reduce(into: [Int]()) { $0.append(($0.last ?? 0) + $1.count) }
        for split in [1, 2, 3, 7, 13, 1000, stream.count] {
            var boundary = WebSocketFrameBoundary()
            var offset = 0
            var seen: [Int] = []
            while offset < stream.count {
                let chunk = Array(stream[offset..<min(offset + split, stream.count)])
                var consumed = 0
                while consumed < chunk.count {
                    let rest = Array(chunk[consumed...])
                    guard let end = rest.withUnsafeBytes({ boundary.advance(over: $0, stoppingAtFrameEnd: true) })
                    else {
                        consumed = chunk.count
                        break
                    }
                    consumed += end
                    seen.append(offset + consumed)
                    #expect(boundary.atBoundary)
                }
                offset += chunk.count
            }
            #expect(seen == ends, "split every \(split) bytes")
        }
    }

    @Test("the close frames: 1008 and the reason, unmasked to the client, masked to the backend")
    func closeFrames() {
        let toClient = WebSocketCloseFrame.toClient(code: 1008, reason: "credential expired")
        #expect(toClient[0] == 0x88 && toClient[1] == 20)
        #expect(Array(toClient[2..<4]) == [0x03, 0xF0])
        #expect(String(decoding: toClient[4...], as: UTF8.self) == "credential expired")
        let mask: [UInt8] = [0x11, 0x22, 0x33, 0x44]
        let toServer = WebSocketCloseFrame.toServer(code: 1008, reason: "session ended", mask: mask)
        #expect(toServer[0] == 0x88 && toServer[1] == 0x80 | 15)
        #expect(Array(toServer[2..<6]) == mask)
        let unmasked = toServer[6...].enumerated().map { $0.element ^ mask[$0.offset % 4] }
        #expect(Array(unmasked[0..<2]) == [0x03, 0xF0])
        #expect(String(decoding: unmasked[2...], as: UTF8.self) == "session ended")
        // Each is one frame of its own for the reader of that direction.
        var boundary = WebSocketFrameBoundary()
        #expect(toServer.withUnsafeBytes { boundary.advance(over: $0, stoppingAtFrameEnd: true) } == toServer.count)
    }

    @Test("a tunnel between frames gets both close frames at once, then relays nothing")
    func closeBetweenFrames() {
        var tunnel = WebSocketTunnelClose()
        let frame = Self.frame(10, masked: true)
        #expect(frame.withUnsafeBytes { tunnel.clientSent($0) } == .init(forward: frame.count, thenClose: false))
        let now = tunnel.close()
        #expect(now.towardsBackend && now.towardsClient && tunnel.isClosed)
        #expect(frame.withUnsafeBytes { tunnel.clientSent($0) } == .init(forward: 0, thenClose: false))
        #expect(frame.withUnsafeBytes { tunnel.backendSent($0) } == .init(forward: 0, thenClose: false))
    }

    @Test("a direction mid-frame finishes its frame, then gets its close frame; the rest is dropped")
    func closeMidFrame() {
        var tunnel = WebSocketTunnelClose()
        let frame = Self.frame(100, masked: false)
        #expect(frame[..<40].withUnsafeBytes { tunnel.backendSent($0) }.forward == 40)
        let now = tunnel.close()
        #expect(now.towardsBackend && !now.towardsClient && !tunnel.isClosed && tunnel.isEnding)
        let rest = Array(frame[40...]) + Self.frame(3, masked: false)
        #expect(rest.withUnsafeBytes { tunnel.backendSent($0) } == .init(forward: frame.count - 40, thenClose: true))
        #expect(tunnel.isClosed)
    }
}
