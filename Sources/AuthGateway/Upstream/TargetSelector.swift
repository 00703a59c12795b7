import NIOCore

/// Round robin over a backend's URLs that skips the ones that recently failed to connect.
///
/// Pure: the caller passes `now`. A target that refused a connection sits out for
/// `cooldown`; when every target is cooling down, all are tried again (a dead backend set
/// should still be probed, not assumed dead forever).
struct TargetSelector {
    let count: Int
    let cooldown: TimeAmount
    private var next = 0
    private var downUntil: [NIODeadline?]

    init(count: Int, cooldown: TimeAmount = .seconds(2)) {
        precondition(count > 0, "a pool needs at least one target")
        self.count = count
        self.cooldown = cooldown
        self.downUntil = Array(repeating: nil, count: count)
    }

    /// The next target to connect to, skipping `excluding` (already tried for this lease) and
    /// cooling-down targets; nil when every target was tried.
    mutating func pick(now: NIODeadline, excluding tried: Set<Int> = []) -> Int? {
        var fallback: Int?
        for offset in 0..<self.count {
            let index = (self.next + offset) % self.count
            guard !tried.contains(index) else { continue }
            if let until = self.downUntil[index], until > now {
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

    mutating func connectFailed(_ index: Int, now: NIODeadline) {
        self.downUntil[index] = now + self.cooldown
    }

    mutating func connectSucceeded(_ index: Int) {
        self.downUntil[index] = nil
    }

    func isCoolingDown(_ index: Int, now: NIODeadline) -> Bool {
        guard let until = self.downUntil[index] else { return false }
        return until > now
    }
}
