import Testing

@testable import AuthGateway

/// The one single-flight + grace table, without I/O: `now` is passed in, flights are numbers.
@Suite("SingleFlightTable")
struct SingleFlightTableTests {
    typealias Table = SingleFlightTable<String, String, Int>
    private let grace = Table.Policy(freshSeconds: 30)
    private let cache = Table.Policy(freshSeconds: 10, staleSeconds: 60)

    /// Starts flights numbered 1, 2, 3…
    private final class Flights {
        var started = 0
        func start() -> Int {
            self.started += 1
            return self.started
        }
    }

    @Test("the first caller leads, the next ones join the same flight")
    func singleFlight() {
        var table = Table(capacity: 8)
        let flights = Flights()
        guard case .lead(1) = table.lookup("k", now: 0, policy: grace, startFlight: flights.start) else {
            Issue.record("first lookup must lead")
            return
        }
        for _ in 0..<5 {
            guard case .joined(1) = table.lookup("k", now: 1, policy: grace, startFlight: flights.start) else {
                Issue.record("later lookups must join")
                return
            }
        }
        #expect(flights.started == 1)
        // Another key has its own flight.
        guard case .lead(2) = table.lookup("other", now: 1, policy: grace, startFlight: flights.start) else {
            Issue.record("another key leads its own flight")
            return
        }
    }

    @Test("a settled outcome is answered while fresh, then a new flight starts")
    func gracePeriod() {
        var table = Table(capacity: 8)
        let flights = Flights()
        _ = table.lookup("k", now: 0, policy: grace, startFlight: flights.start)
        table.settle("k", now: 5, keep: .value("new pair"))
        guard case .fresh("new pair") = table.lookup("k", now: 34.9, policy: grace, startFlight: flights.start) else {
            Issue.record("within the grace period the outcome is remembered (counted from when it was stored)")
            return
        }
        guard case .lead(2) = table.lookup("k", now: 35, policy: grace, startFlight: flights.start) else {
            Issue.record("after the grace period a new flight starts")
            return
        }
    }

    @Test("an outcome settled with .nothing is forgotten: the next caller leads again")
    func forget() {
        var table = Table(capacity: 8)
        let flights = Flights()
        _ = table.lookup("k", now: 0, policy: grace, startFlight: flights.start)
        table.settle("k", now: 1, keep: .nothing)
        guard case .lead(2) = table.lookup("k", now: 1, policy: grace, startFlight: flights.start) else {
            Issue.record("a forgotten outcome is not answered")
            return
        }
        #expect(table.count == 1)
    }

    @Test("stale while revalidate: one lookup leads the refresh, others get the stale value, expired ones join it")
    func staleWhileRevalidate() {
        var table = Table(capacity: 8)
        let flights = Flights()
        _ = table.lookup("k", now: 0, policy: cache, startFlight: flights.start)
        table.settle("k", now: 0, keep: .value("v1"))
        guard case .fresh("v1") = table.lookup("k", now: 9, policy: cache, startFlight: flights.start) else {
            Issue.record("fresh within ttl")
            return
        }
        guard case .stale("v1", refresh: 2?) = table.lookup("k", now: 11, policy: cache, startFlight: flights.start)
        else {
            Issue.record("the first stale lookup leads a refresh")
            return
        }
        guard case .stale("v1", refresh: nil) = table.lookup("k", now: 12, policy: cache, startFlight: flights.start)
        else {
            Issue.record("later stale lookups do not start another refresh")
            return
        }
        guard case .joined(2) = table.lookup("k", now: 71, policy: cache, startFlight: flights.start) else {
            Issue.record("past the stale window, a lookup joins the refresh in flight")
            return
        }
        // The refresh failed: the previous value stays, with its age.
        table.settle("k", now: 71, keep: .previous)
        #expect(table.peek("k")?.value == "v1")
        #expect(table.peek("k")?.storedAt == 0)
        guard case .lead(3) = table.lookup("k", now: 72, policy: cache, startFlight: flights.start) else {
            Issue.record("an expired value with nothing in flight makes the caller lead")
            return
        }
        table.settle("k", now: 72, keep: .value("v2"))
        guard case .fresh("v2") = table.lookup("k", now: 73, policy: cache, startFlight: flights.start) else {
            Issue.record("the refreshed value is fresh")
            return
        }
    }

    @Test("keeping .previous without a previous value forgets the key")
    func previousWithoutValue() {
        var table = Table(capacity: 8)
        let flights = Flights()
        _ = table.lookup("k", now: 0, policy: cache, startFlight: flights.start)
        table.settle("k", now: 1, keep: .previous)
        #expect(table.count == 0)
    }

    @Test("the table is bounded; an entry evicted while in flight strands nobody (joiners hold the flight)")
    func bounded() {
        var table = Table(capacity: 2)
        let flights = Flights()
        _ = table.lookup("a", now: 0, policy: grace, startFlight: flights.start)
        _ = table.lookup("b", now: 0, policy: grace, startFlight: flights.start)
        _ = table.lookup("c", now: 0, policy: grace, startFlight: flights.start)
        #expect(table.count == 2)
        // "a" was evicted: its leader settles without harm; a new caller leads afresh.
        table.settle("a", now: 1, keep: .value("late"))
        #expect(table.count == 2)
        #expect(flights.started == 3)
    }
}
