/// "One call in flight per key, joiners wait, the outcome is kept for a while" — written once
/// for the refresh grace table, the profile cache, the introspection cache and the JWKS
/// fetches (docs/architecture.md). A pure, bounded (LRU) table: `now` comes in, nothing here
/// waits or locks.
///
/// An entry holds the last outcome with the time it was stored, and the call in flight if
/// there is one. `InFlight` is what joiners wait on: a future in `LocalSingleFlight`, a plain
/// value in tests. The leader completes it itself; the table only remembers it, so an entry
/// evicted while in flight strands nobody.
///
/// Freshness follows a `Policy`: an outcome younger than `freshSeconds` is answered as it is;
/// up to `staleSeconds` later it is still answered, and the first such lookup leads a refresh
/// (stale-while-revalidate); older, or absent, the caller leads a new call or joins the one in
/// flight.
struct SingleFlightTable<Key: Hashable, Value, InFlight> {
    struct Policy: Equatable {
        var freshSeconds: Double
        var staleSeconds: Double = 0
    }

    enum Lookup {
        case fresh(Value)
        /// Served stale; `refresh` is the caller's to lead in the background (nil when a
        /// refresh is already in flight).
        case stale(Value, refresh: InFlight?)
        /// A call is in flight: wait for it.
        case joined(InFlight)
        /// The caller makes the call and settles it.
        case lead(InFlight)
    }

    /// What a settled call leaves in the table.
    enum Keep {
        /// Remember this outcome from now on.
        case value(Value)
        /// Forget the key (an outcome that must not be reused, e.g. "unavailable").
        case nothing
        /// Keep the previous outcome and its age (a failed refresh of a stale entry).
        case previous
    }

    fileprivate struct Entry {
        var value: Value?
        var storedAt: Double
        var inFlight: InFlight?
    }

    private var entries: LRUCache<Key, Entry>

    init(capacity: Int) {
        self.entries = LRUCache(capacity: capacity)
    }

    var count: Int { self.entries.count }

    /// The outcome for `key`, or the call to join or lead. `startFlight` is called only when
    /// this lookup leads a call (no allocation on a hit). `isCurrent` can end a remembered
    /// outcome before the policy does (an outcome with its own expiry, e.g. an introspected
    /// token's `exp`): one it refuses counts as absent.
    mutating func lookup(
        _ key: Key, now: Double, policy: Policy, isCurrent: (Value) -> Bool = { _ in true }, startFlight: () -> InFlight
    ) -> Lookup {
        var entry = self.entries.get(key) ?? Entry(value: nil, storedAt: now, inFlight: nil)
        if let value = entry.value, isCurrent(value) {
            let age = now - entry.storedAt
            if age < policy.freshSeconds { return .fresh(value) }
            if age < policy.freshSeconds + policy.staleSeconds {
                guard entry.inFlight == nil else { return .stale(value, refresh: nil) }
                let flight = startFlight()
                entry.inFlight = flight
                self.entries.set(key, entry)
                return .stale(value, refresh: flight)
            }
        }
        if let inFlight = entry.inFlight { return .joined(inFlight) }
        let flight = startFlight()
        entry.inFlight = flight
        self.entries.set(key, entry)
        return .lead(flight)
    }

    /// Ends the call in flight for `key`, keeping what `keep` says.
    mutating func settle(_ key: Key, now: Double, keep: Keep) {
        let previous = self.entries.peek(key)
        switch keep {
        case .value(let value):
            self.entries.set(key, Entry(value: value, storedAt: now, inFlight: nil))
        case .nothing:
            self.entries.remove(key)
        case .previous:
            if var entry = previous, entry.value != nil {
                entry.inFlight = nil
                self.entries.set(key, entry)
            } else {
                self.entries.remove(key)
            }
        }
    }

    /// Forgets every remembered outcome `matches` selects (calls in flight go on); returns how
    /// many. A walk over the table: for a Shared Signals event, not for requests.
    @discardableResult
    mutating func forget(where matches: (Key, Value) -> Bool) -> Int {
        self.entries.removeAll { key, entry in
            guard entry.inFlight == nil, let value = entry.value else { return false }
            return matches(key, value)
        }
    }

    /// The remembered outcome and when it was stored, without touching recency.
    func peek(_ key: Key) -> (value: Value, storedAt: Double)? {
        guard let entry = self.entries.peek(key), let value = entry.value else { return nil }
        return (value, entry.storedAt)
    }
}

extension SingleFlightTable: Sendable where Key: Sendable, Value: Sendable, InFlight: Sendable {}
extension SingleFlightTable.Entry: Sendable where Key: Sendable, Value: Sendable, InFlight: Sendable {}
