import NIOCore
import NIOEmbedded
import Testing

@testable import AuthGateway

/// `LocalSingleFlight.lookup`, the one single-flight lookup every cache and store uses: what it
/// answers, when it calls `lead`, and the two ways its answer is turned into a future.
@Suite("LocalSingleFlight")
struct LocalSingleFlightTests {
    typealias Flights = LocalSingleFlight<String, String>
    let grace = Flights.Policy(freshSeconds: 30)

    /// A table on an embedded loop (made on the test's thread, which the loop is bound to), and
    /// the flights `lead` was handed, in order.
    final class Rig {
        let loop = EmbeddedEventLoop()
        let table = Flights(capacity: 8)
        var flights: [Flights.Flight] = []

        func lookup(now: Double, policy: Flights.Policy) -> SingleFlightAnswer<String, EventLoopFuture<String>> {
            self.table.lookup("k", now: now, policy: policy, eventLoop: self.loop) { flight in
                self.flights.append(flight)
                return flight.promise.futureResult
            }
        }
    }

    @Test func theFirstLookupLeadsTheOthersJoinAndAllGetTheOutcome() throws {
        let rig = Rig()
        let table = rig.table
        guard case .led(let led) = rig.lookup(now: 0, policy: self.grace) else {
            Issue.record("the first lookup leads")
            return
        }
        guard case .joined(let joined) = rig.lookup(now: 1, policy: self.grace) else {
            Issue.record("a second lookup joins")
            return
        }
        #expect(rig.flights.count == 1)
        table.settle(rig.flights[0], now: 2, outcome: "pair", remember: true)
        #expect(try led.wait() == "pair")
        #expect(try joined.wait() == "pair")
        guard case .fresh("pair") = rig.lookup(now: 31.9, policy: self.grace) else {
            Issue.record("remembered for the grace period, counted from the settle")
            return
        }
        guard case .led = rig.lookup(now: 32, policy: self.grace) else {
            Issue.record("led again once the grace period is over")
            return
        }
        #expect(rig.flights.count == 2)
        table.settle(rig.flights[1], now: 33, outcome: "pair 2", remember: true)
    }

    @Test func aStaleOutcomeIsAnsweredWhileOneBackgroundRefreshIsLed() {
        let rig = Rig()
        let table = rig.table
        let cache = Flights.Policy(freshSeconds: 10, staleSeconds: 60)
        _ = rig.lookup(now: 0, policy: cache)
        table.settle(rig.flights[0], now: 0, outcome: "v1", remember: true)
        guard case .stale("v1") = rig.lookup(now: 11, policy: cache) else {
            Issue.record("past its freshness: stale")
            return
        }
        #expect(rig.flights.count == 2, "the stale answer led a refresh")
        guard case .stale("v1") = rig.lookup(now: 12, policy: cache) else {
            Issue.record("still stale while the refresh is in flight")
            return
        }
        #expect(rig.flights.count == 2, "one refresh at a time")
        table.settle(rig.flights[1], now: 13, outcome: "v2", remember: true)
        guard case .fresh("v2") = rig.lookup(now: 14, policy: cache) else {
            Issue.record("the refresh's outcome is fresh")
            return
        }
    }

    @Test func anOutcomeRefusedByIsCurrentCountsAsAbsent() {
        let rig = Rig()
        let table = rig.table
        _ = rig.lookup(now: 0, policy: self.grace)
        table.settle(rig.flights[0], now: 0, outcome: "expired", remember: true)
        let isCurrent: (String) -> Bool = { $0 != "expired" }
        let answer = table.lookup("k", now: 1, policy: self.grace, eventLoop: rig.loop, isCurrent: isCurrent) {
            rig.flights.append($0)
            return $0.promise.futureResult
        }
        guard case .led = answer else {
            Issue.record("an outcome past its own expiry is not answered")
            return
        }
        table.settle(rig.flights[1], now: 2, outcome: "renewed", remember: true)
    }

    @Test func settleWhenACallEndsKeepsWhatRememberSays() throws {
        let rig = Rig()
        let table = rig.table
        _ = rig.lookup(now: 0, policy: self.grace)
        let failing = rig.loop.makePromise(of: String.self)
        table.settle(rig.flights[0], when: failing.futureResult, failure: "unavailable", clock: { 5 }) {
            $0 != "unavailable"
        }
        failing.fail(ChannelError.ioOnClosedChannel)
        #expect(try rig.flights[0].promise.futureResult.wait() == "unavailable")
        #expect(table.count == 0, "a failure the predicate refuses is not kept")
        guard case .led = rig.lookup(now: 6, policy: self.grace) else {
            Issue.record("the next lookup leads a new call")
            return
        }
        table.settle(rig.flights[1], when: rig.loop.makeSucceededFuture("pair"), failure: "x", clock: { 7 }) { _ in
            true
        }
        guard case .fresh("pair") = rig.lookup(now: 36.9, policy: self.grace) else {
            Issue.record("kept from the clock's time at the settle")
            return
        }
    }

    @Test func theAnswerAsOneFutureWithItsRole() throws {
        let rig = Rig()
        let table = rig.table
        var joinedCalls = 0
        let withRole = { (now: Double) in
            table.lookup("k", now: now, policy: self.grace, eventLoop: rig.loop) { flight in
                rig.flights.append(flight)
                return flight.promise.futureResult.map { ($0, SingleFlightRole.led) }
            }.outcome(on: rig.loop) { joinedCalls += 1 }
        }
        let led = withRole(0)
        let joined = withRole(1)
        #expect(joinedCalls == 1)
        table.settle(rig.flights[0], now: 2, outcome: "pair", remember: true)
        #expect(try led.wait() == ("pair", .led))
        #expect(try joined.wait() == ("pair", .joined))
        #expect(try withRole(3).wait() == ("pair", .remembered))
        #expect(joinedCalls == 1)
        #expect(try rig.lookup(now: 4, policy: self.grace).future(on: rig.loop).wait() == "pair")
        #expect(rig.lookup(now: 4, policy: self.grace).role == .remembered)
    }
}
