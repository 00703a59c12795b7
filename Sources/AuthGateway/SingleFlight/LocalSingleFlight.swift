import NIOCore

/// A `SingleFlightTable` shared by every event loop of this process: sharded by key hash, each
/// shard a short critical section never held across I/O (docs/architecture.md). Joiners wait
/// on the leader's future, hopped to their own loop.
///
/// `lookup(_:now:policy:eventLoop:isCurrent:lead:)` is the one single-flight lookup of the
/// gateway (refreshes, profiles, introspection, key fetches): it answers from the table, joins
/// the call in flight, or hands the caller a `Flight` to lead.
final class LocalSingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Policy = SingleFlightTable<Key, Value, EventLoopFuture<Value>>.Policy
    typealias Keep = SingleFlightTable<Key, Value, EventLoopFuture<Value>>.Keep

    /// A call this caller leads; end it with `settle`.
    struct Flight: Sendable {
        let key: Key
        let promise: EventLoopPromise<Value>
    }

    private let shards: Sharded<SingleFlightTable<Key, Value, EventLoopFuture<Value>>>

    init(capacity: Int) {
        self.shards = Sharded(capacity: capacity) { SingleFlightTable(capacity: $0) }
    }

    /// The outcome for `key`: remembered (fresh or stale), the call in flight to join (its
    /// future completes on `eventLoop`), or a new call, which `lead` starts and ends with
    /// `settle`. `lead` also runs for the background refresh of a stale outcome (its result is
    /// then dropped: the caller is answered with the stale outcome). Leading does not allocate
    /// on a hit: the flight's promise is made only when this lookup leads.
    func lookup<Led>(
        _ key: Key, now: Double, policy: Policy, eventLoop: EventLoop, isCurrent: (Value) -> Bool = { _ in true },
        lead: (Flight) -> Led
    ) -> SingleFlightAnswer<Value, Led> {
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
            if refresh != nil, let promise { _ = lead(Flight(key: key, promise: promise)) }
            return .stale(value)
        case .joined(let inFlight):
            return .joined(inFlight.hop(to: eventLoop))
        case .lead:
            return .led(lead(Flight(key: key, promise: promise!)))
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

    /// Ends `flight` with what `call` gives, or `failure` when it fails; the outcome is kept
    /// when `remember` says so, from the moment it is known (`clock`).
    func settle(
        _ flight: Flight, when call: EventLoopFuture<Value>, failure: Value, clock: @escaping @Sendable () -> Double,
        remember: @escaping @Sendable (Value) -> Bool
    ) {
        call.whenComplete { result in
            let outcome = (try? result.get()) ?? failure
            self.settle(flight, now: clock(), outcome: outcome, remember: remember(outcome))
        }
    }

    /// Forgets every remembered outcome `matches` selects, in every shard (a Shared Signals
    /// event: docs/streams.md); returns how many.
    @discardableResult
    func forget(where matches: (Key, Value) -> Bool) -> Int {
        var forgotten = 0
        self.shards.forEachShard { forgotten += $0.forget(where: matches) }
        return forgotten
    }

    /// Entries held (for metrics and tests; visits every shard).
    var count: Int {
        var total = 0
        self.shards.forEachShard { total += $0.count }
        return total
    }
}
