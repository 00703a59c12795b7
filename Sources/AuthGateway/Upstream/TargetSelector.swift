import NIOCore

/// Round robin over an upstream's URLs that skips the ones out of rotation.
///
/// Pure. Which URLs are out (a refused connect's sit-out, an ejection, a failed health check)
/// is decided in one place, `TargetHealth`, and handed in as a mask (`outOfRotation`, bit `i`
/// for URL `i`). When every URL is out, all are tried again — panic routing: a dead or
/// misjudged set should still be probed by traffic, not assumed dead forever.
struct TargetSelector {
    let count: Int
    /// Bit `i` set: URL `i` is out of rotation.
    var outOfRotation: UInt64 = 0
    private var next = 0

    init(count: Int) {
        precondition(count > 0, "a pool needs at least one target")
        self.count = count
    }

    /// The next target to connect to, skipping `excluding` (already tried for this lease) and
    /// targets out of rotation; nil when every target was tried.
    mutating func pick(excluding tried: Set<Int> = []) -> Int? {
        var fallback: Int?
        for offset in 0..<self.count {
            let index = (self.next + offset) % self.count
            guard !tried.contains(index) else { continue }
            if self.isOut(index) {
                if fallback == nil { fallback = index }
                continue
            }
            self.next = (index + 1) % self.count
            return index
        }
        if let fallback {
            self.next = (fallback + 1) % self.count
        }
        return fallback
    }

    func isOut(_ index: Int) -> Bool {
        index < 64 && self.outOfRotation & (1 << UInt64(index)) != 0
    }
}
