import Foundation
import Testing

@testable import AuthGateway

/// Each transition of one instance's flight through the shared table, without a database.
@Suite("SharedFlightDecision")
struct SharedFlightDecisionTests {
    static let me = UUID()
    static let other = UUID()
    static let third = UUID()
    static let sealed: [UInt8] = [1, 2, 3]

    /// Lease 2000 ms, poll 50 ms, started at 0.
    func flight() -> SharedFlightDecision {
        SharedFlightDecision(me: Self.me, leaseMilliseconds: 2000, pollMilliseconds: 50, now: 0)
    }

    func inFlight(_ claimant: UUID, remaining: Int64) -> SharedRefreshRow {
        SharedRefreshRow(claimant: claimant, sealedOutcome: nil, remainingMilliseconds: remaining)
    }

    func settled(_ claimant: UUID, remaining: Int64) -> SharedRefreshRow {
        SharedRefreshRow(claimant: claimant, sealedOutcome: Self.sealed, remainingMilliseconds: remaining)
    }

    @Test func winningTheClaimLeads() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.me, remaining: 2000), now: 3) == .lead)
        #expect(flight.isFinished)
    }

    @Test func aFreshStoredOutcomeIsUsedAsRemembered() {
        var flight = self.flight()
        #expect(
            flight.claimed(self.settled(Self.other, remaining: 1200), now: 3)
                == .use(sealedOutcome: Self.sealed, remainingMilliseconds: 1200, role: .remembered))
    }

    @Test func anotherClaimantsFlightIsAwaitedAndItsOutcomeJoined() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 1500), now: 0) == .wait(milliseconds: 50))
        #expect(flight.read(self.inFlight(Self.other, remaining: 1450), now: 50) == .wait(milliseconds: 50))
        #expect(
            flight.read(self.settled(Self.other, remaining: 30000), now: 100)
                == .use(sealedOutcome: Self.sealed, remainingMilliseconds: 30000, role: .joined))
        #expect(flight.isFinished)
    }

    @Test func theLastWaitEndsWithTheLease() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 120), now: 0) == .wait(milliseconds: 50))
        #expect(flight.read(self.inFlight(Self.other, remaining: 70), now: 50) == .wait(milliseconds: 50))
        #expect(flight.read(self.inFlight(Self.other, remaining: 20), now: 100) == .wait(milliseconds: 20))
    }

    @Test func aCrashedClaimantsEndedLeaseIsTakenOver() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 100), now: 0) == .wait(milliseconds: 50))
        #expect(flight.read(self.inFlight(Self.other, remaining: 50), now: 50) == .wait(milliseconds: 50))
        // The database's clock says the lease is over.
        #expect(flight.read(self.inFlight(Self.other, remaining: 0), now: 100) == .claim)
        #expect(flight.claimed(self.inFlight(Self.me, remaining: 2000), now: 102) == .lead)
    }

    @Test func ourDeadlineAloneAlsoTriggersTheTakeover() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 40), now: 0) == .wait(milliseconds: 40))
        // Our clock is past the lease; the database's is a little behind.
        #expect(flight.read(self.inFlight(Self.other, remaining: 5), now: 40) == .claim)
        // The takeover lost to the same claimant by a hair: wait for the rest of its lease.
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 3), now: 41) == .wait(milliseconds: 3))
        #expect(flight.read(self.inFlight(Self.other, remaining: -1), now: 44) == .claim)
        #expect(flight.claimed(self.inFlight(Self.me, remaining: 2000), now: 45) == .lead)
    }

    @Test func aTakeoverLostToAnotherInstanceGivesUpInsteadOfWaitingASecondLease() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 30), now: 0) == .wait(milliseconds: 30))
        #expect(flight.read(self.inFlight(Self.other, remaining: 0), now: 30) == .claim)
        #expect(flight.claimed(self.inFlight(Self.third, remaining: 2000), now: 31) == .giveUp)
        #expect(flight.isFinished)
    }

    @Test func anOutcomeFoundByTheTakeoverClaimIsJoined() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 30), now: 0) == .wait(milliseconds: 30))
        #expect(flight.read(self.inFlight(Self.other, remaining: 0), now: 30) == .claim)
        #expect(
            flight.claimed(self.settled(Self.other, remaining: 900), now: 31)
                == .use(sealedOutcome: Self.sealed, remainingMilliseconds: 900, role: .joined))
    }

    @Test func aFlightThatEndedWithNothingToShareGivesUp() {
        // The leader got "unavailable" (stored expired at once) and another request claimed
        // anew before this waiter read the row.
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 1500), now: 0) == .wait(milliseconds: 50))
        #expect(flight.read(self.inFlight(Self.third, remaining: 2000), now: 50) == .giveUp)
    }

    @Test func aSweptRowIsClaimedAgain() {
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 1500), now: 0) == .wait(milliseconds: 50))
        #expect(flight.read(nil, now: 50) == .claim)
        #expect(flight.claimed(self.inFlight(Self.me, remaining: 2000), now: 51) == .lead)
    }

    @Test func aClaimThatSeesNoRowWaitsForTheConcurrentClaimant() {
        var flight = self.flight()
        #expect(flight.claimed(nil, now: 0) == .wait(milliseconds: 50))
        // The row shows up: its claimant's lease is awaited in full.
        #expect(flight.read(self.inFlight(Self.other, remaining: 1900), now: 50) == .wait(milliseconds: 50))
        #expect(flight.read(self.inFlight(Self.other, remaining: 1850), now: 100) == .wait(milliseconds: 50))
        #expect(
            flight.read(self.settled(Self.other, remaining: 30000), now: 150)
                == .use(sealedOutcome: Self.sealed, remainingMilliseconds: 30000, role: .joined))
    }

    @Test func noWaitLastsLongerThanTheLeaseAndAPoll() {
        var flight = self.flight()
        var step = flight.claimed(self.inFlight(Self.other, remaining: 2000), now: 0)
        var now: Int64 = 0
        var remaining: Int64 = 2000
        var claims = 0
        // A claimant whose lease the database keeps reporting as not over (say, its clock is
        // far behind ours): this instance still stops waiting.
        while case .wait(let milliseconds) = step {
            now += milliseconds
            remaining = max(remaining - milliseconds, 1)
            step = flight.read(self.inFlight(Self.other, remaining: remaining), now: now)
            if step == .claim {
                claims += 1
                step = flight.claimed(self.inFlight(Self.other, remaining: remaining), now: now)
            }
        }
        #expect(step == .giveUp)
        #expect(now <= 2000 + 50)
        #expect(claims >= 1)
    }

    @Test func aLongerLeaseOfAnotherInstanceIsAwaitedInFull() {
        // The claimant's auth-service timeout is longer than ours.
        var flight = self.flight()
        #expect(flight.claimed(self.inFlight(Self.other, remaining: 5000), now: 0) == .wait(milliseconds: 50))
        #expect(flight.read(self.inFlight(Self.other, remaining: 1000), now: 4000) == .wait(milliseconds: 50))
        #expect(
            flight.read(self.settled(Self.other, remaining: 30000), now: 4050)
                == .use(sealedOutcome: Self.sealed, remainingMilliseconds: 30000, role: .joined))
    }
}
