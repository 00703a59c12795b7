/// One event loop's memo of the session handles it saw last and their SHA-256 digests, so that
/// a browser's next request finds its session without hashing the handle again (measured: about
/// a fifth of what a session request costs beyond a bearer request; docs/benchmarks.md).
///
/// A digest is a pure function of its handle, so an entry is never stale: whether the session
/// still lives is decided by the store, under the digest, on every request. Like `RecentTokens`
/// for bearer tokens, the memo holds credentials in this process's memory — at most `slotCount`
/// handles per loop, each until another handle takes its slot — while the session store itself
/// (in process and in PostgreSQL) stays keyed by digest only (docs/browser-sign-in.md). A handle
/// enters only once it led to a live session, so made-up handles never displace real ones; a hit
/// needs the whole handle to match byte for byte. Direct-mapped; confined to its loop: no lock.
final class RecentSessionDigests {
    private struct Entry {
        let handle: String
        let digest: TokenDigest
    }

    static let defaultSlotCount = 64

    private var slots: [Entry?]

    init(slotCount: Int = RecentSessionDigests.defaultSlotCount) {
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0, "slot count must be a power of two")
        self.slots = Array(repeating: nil, count: slotCount)
    }

    /// The handle's digest: remembered by this loop, or computed.
    func digest(of handle: SessionHandle) -> TokenDigest {
        if let entry = self.slots[self.slot(of: handle)], ASCII.bytesEqual(entry.handle, handle.value) {
            return entry.digest
        }
        return handle.digest
    }

    /// Remembers a handle that led to a live session (copied out of the request's header).
    func remember(_ handle: SessionHandle, digest: TokenDigest) {
        let slot = self.slot(of: handle)
        if let entry = self.slots[slot], ASCII.bytesEqual(entry.handle, handle.value) { return }
        self.slots[slot] = Entry(handle: String(handle.value), digest: digest)
    }

    /// A handle is 256 random bits in base64url: its first eight characters, read as one word,
    /// pick the slot — no hashing needed (a live session's handle is the gateway's own random
    /// value, and which slot only decides what a handle evicts).
    private func slot(of handle: SessionHandle) -> Int {
        var value = handle.value
        let word = value.withUTF8 { bytes -> UInt64 in
            var word: UInt64 = 0
            for index in 0..<min(8, bytes.count) { word = word << 8 | UInt64(bytes[index]) }
            return word
        }
        return Int(truncatingIfNeeded: word ^ (word >> 29)) & (self.slots.count - 1)
    }
}

@available(*, unavailable)
extension RecentSessionDigests: Sendable {}
