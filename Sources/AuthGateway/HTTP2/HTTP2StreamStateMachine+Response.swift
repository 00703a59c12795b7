import NIOCore
import NIOHPACK

/// The response half of an HTTP/2 stream: what the gateway has written to the client and what
/// it holds back. A frame is held so that END_STREAM rides on the last one: a response without
/// body is one HEADERS frame, and a body read in one go one DATA frame — not that and an empty
/// one to end the stream.
extension HTTP2StreamStateMachine {
    /// States and legal transitions:
    /// - `idle`: nothing written → `headersHeld` (the backend's head) | `ended` (the gateway's
    ///   own answer, a reset)
    /// - `headersHeld`: the backend's HEADERS, held until its first DATA, the end of the
    ///   backend's read burst, or its end → `streaming` | `ended`
    /// - `streaming`: HEADERS written; the latest DATA held (if any) until the next part, the
    ///   end of the backend's read burst, or the end → `ended`
    /// - `ended`: END_STREAM written, or the stream reset; final.
    ///
    /// `trailers`: from an HTTP/2 backend, kept for the end, which they carry.
    enum Response: Equatable {
        case idle
        case headersHeld(HPACKHeaders, trailers: HPACKHeaders?)
        case streaming(heldData: ByteBuffer?, trailers: HPACKHeaders?)
        case ended
    }

    /// A frame the response held back, written without END_STREAM.
    enum HeldFrame: Equatable {
        case none
        case headers(HPACKHeaders)
        case data(ByteBuffer)
    }

    /// The last frames of a response from a backend: where its END_STREAM goes.
    enum LastFrames: Equatable {
        /// On the held HEADERS: a response without body.
        case headers(HPACKHeaders)
        /// On the held DATA.
        case data(ByteBuffer)
        /// On an empty DATA frame: all the rest has gone out already.
        case emptyData
        /// The frame still held, then the backend's trailers, which end the stream.
        case trailers(HPACKHeaders, after: HeldFrame)
    }
}

extension HTTP2StreamStateMachine.Response {
    typealias HeldFrame = HTTP2StreamStateMachine.HeldFrame
    typealias LastFrames = HTTP2StreamStateMachine.LastFrames

    /// A DATA part of the backend's response takes the held frame's place: the frame to write
    /// now.
    mutating func hold(_ part: ByteBuffer) -> HeldFrame {
        switch self.take() {
        case .idle:
            // Not reached: a body part follows the head, which is held first.
            self = .streaming(heldData: part, trailers: nil)
            return .none
        case .headersHeld(let headers, let trailers):
            self = .streaming(heldData: part, trailers: trailers)
            return .headers(headers)
        case .streaming(let held, let trailers):
            self = .streaming(heldData: part, trailers: trailers)
            return held.map { .data($0) } ?? .none
        case .ended:
            self = .ended
            return .none
        }
    }

    /// The backend's read burst ended, the response goes on: the held frame to write now.
    mutating func release() -> HeldFrame {
        switch self.take() {
        case .headersHeld(let headers, let trailers):
            self = .streaming(heldData: nil, trailers: trailers)
            return .headers(headers)
        case .streaming(.some(let held), let trailers):
            self = .streaming(heldData: nil, trailers: trailers)
            return .data(held)
        case .streaming(.none, let trailers):
            self = .streaming(heldData: nil, trailers: trailers)
            return .none
        case .idle:
            self = .idle
            return .none
        case .ended:
            self = .ended
            return .none
        }
    }

    /// Keeps the backend's trailers for the end.
    mutating func keep(_ trailers: HPACKHeaders) {
        switch self.take() {
        case .headersHeld(let headers, _): self = .headersHeld(headers, trailers: trailers)
        case .streaming(let held, _): self = .streaming(heldData: held, trailers: trailers)
        case .idle: self = .idle
        case .ended: self = .ended
        }
    }

    /// The backend's response is complete: its last frames; the response half ends.
    mutating func end() -> LastFrames {
        switch self.take() {
        case .headersHeld(let headers, .some(let trailers)): return .trailers(trailers, after: .headers(headers))
        case .headersHeld(let headers, .none): return .headers(headers)
        case .streaming(let held, .some(let trailers)):
            return .trailers(trailers, after: held.map { .data($0) } ?? .none)
        case .streaming(.some(let held), .none): return .data(held)
        case .streaming(.none, .none), .idle, .ended: return .emptyData
        }
    }

    /// How far the response had gone when the call was cut short (`cutShort`).
    enum Cut: Equatable {
        /// Nothing was written or held: the gateway's answer is Trailers-Only.
        case notBegun
        /// The HEADERS went out or are held: `HeldFrame` must go before the gateway's trailers.
        case begun(HeldFrame)
        /// END_STREAM went out already.
        case ended
    }

    /// The response is cut short before its end (docs/streams.md): how far it had gone. The
    /// response half ends.
    mutating func cutShort() -> Cut {
        switch self.take() {
        case .idle: return .notBegun
        case .headersHeld(let headers, _): return .begun(.headers(headers))
        case .streaming(let held, _): return .begun(held.map { .data($0) } ?? .none)
        case .ended: return .ended
        }
    }

    /// Moves the response half out, leaving `ended` in its place (`swap` moves: nothing is
    /// retained or released); every caller sets where it goes next.
    private mutating func take() -> Self {
        var taken = Self.ended
        swap(&taken, &self)
        return taken
    }
}
