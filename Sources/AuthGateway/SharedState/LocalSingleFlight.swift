import NIOCore

/// A `SingleFlightTable` shared by every event loop of this process: sharded by key hash, each
/// shard a short critical section never held across I/O (DESIGN.md). Joiners wait on the
/// leader's future, hopped to their own loop.
final class LocalSingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Policy = SingleFlightTable<Key, Value, EventLoopFuture<Value>>.Policy
    typealias Keep = SingleFlightTable<Key, Value, EventLoopFuture<Value>>.Keep

    /// A call this caller leads; end it with `settle`.
    struct Flight: Sendable {
        let key: Key
        let promise: EventLoopPromise<Value>
    }

    enum Step {
        case fresh(Value)
        /// Answer with `value`; lead `refresh` in the background when given.
        case stale(Value, refresh: Flight?)
        /// Wait for the call in flight (completes on the caller's loop).
        case joined(EventLoopFuture<Value>)
        case lead(Flight)
    }

    private let shards: Sharded<SingleFlightTable<Key, Value, EventLoopFuture<Value>>>

    init(capacity: Int) {
        self.shards = Sharded(capacity: capacity) { SingleFlightTable(capacity: $0) }
    }

    func lookup(
        _ key: Key, now: Double, policy: Policy, eventLoop: EventLoop, isCurrent: (Value) -> Bool = { _ in true }
    ) -> Step {
        var promise: EventLoopPromise<Value>?
        let lookup = self.shards.withShard(for: key) { table in
            table.lookup(key, now: now, policy: policy, isCurrent: isCurrent) {
                let made = eventLoop.makePromise(of: Value.self)
                promise = made
                return made.futureResult
            }
        }
        switch lookup {
        case .fresh(let value):
            return .fresh(value)
        case .stale(let value, let refresh):
            return .stale(value, refresh: refresh == nil ? nil : promise.map { Flight(key: key, promise: $0) })
        case .joined(let inFlight):
            return .joined(inFlight.hop(to: eventLoop))
        case .lead:
            return .lead(Flight(key: key, promise: promise!))
        }
    }

    /// Ends `flight`: `decide` sees the previous outcome (and when it was stored) and says what
    /// to keep and what the leader and every joiner receive.
    func settle(
        _ flight: Flight, now: Double,
        decide: (_ previous: (value: Value, storedAt: Double)?) -> (keep: Keep, deliver: Value)
    ) {
        let deliver: Value = self.shards.withShard(for: flight.key) { table in
            let decision = decide(table.peek(flight.key))
            table.settle(flight.key, now: now, keep: decision.keep)
            return decision.deliver
        }
        flight.promise.succeed(deliver)
    }

    /// Ends `flight` keeping `outcome` (or forgetting it) and delivering it as it is.
    func settle(_ flight: Flight, now: Double, outcome: Value, remember: Bool) {
        self.settle(flight, now: now) { _ in (remember ? .value(outcome) : .nothing, outcome) }
    }

    /// Entries held (for metrics and tests; visits every shard).
    var count: Int {
        var total = 0
        self.shards.forEachShard { total += $0.count }
        return total
    }
}
