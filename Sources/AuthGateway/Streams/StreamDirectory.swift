import NIOConcurrencyHelpers
import NIOCore

/// Every event loop's stream registry (`LoopStreams`), for revocations decided off the loop
/// that holds the stream: a sign-out on another connection, a back-channel logout, a Shared
/// Signals event, a session ended on another instance (docs/streams.md). A revocation is
/// handed to each loop as a task (`eventLoop.execute`) and looked up there in its index — the
/// request path never takes a lock for it, and the loops' registries are never shared.
///
/// Process-wide, made before the session stores (which tell it of every end, as their
/// `SessionObserver`); the loops are attached once their workers exist.
final class StreamDirectory: SessionObserver {
    private let loops = NIOLockedValueBox<[NIOLoopBound<LoopStreams>]>([])

    init() {}

    /// The loops' registries, once, when their workers are built.
    func attach(_ loops: [NIOLoopBound<LoopStreams>]) {
        self.loops.withLockedValue { $0 = loops }
    }

    /// Ends every stream `selector` names, on every loop, for `reason`.
    func revoke(_ selector: StreamIndex<ObjectIdentifier>.Selector, reason: StreamCloseReason) {
        for loop in self.loops.withLockedValue({ $0 }) {
            loop.eventLoop.execute { loop.value.revoke(selector, reason: reason) }
        }
    }

    // MARK: SessionObserver

    func sessionEnded(_ digest: TokenDigest, reason: SessionEndReason) {
        self.revoke(.session(digest), reason: StreamCloseReason(reason))
    }

    func sessionsEnded(providerSessionID sid: String?, subject: String?, reason: SessionEndReason) {
        guard sid != nil || subject != nil else { return }
        self.revoke(.sessions(providerSessionID: sid, subject: subject), reason: StreamCloseReason(reason))
    }
}
