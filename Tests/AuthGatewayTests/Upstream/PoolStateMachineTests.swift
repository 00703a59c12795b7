import NIOCore
import Testing

@testable import AuthGateway

/// `PoolStateMachine` event by event, no I/O (the shape of AsyncHTTPClient's
/// `HTTPConnectionPool+HTTP1StateTests`). Connections are plain strings.
@Suite("PoolStateMachine")
struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine<String>
    private let now = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// Connects for `lease` and returns the connection delivered.
    private func open(_ pool: inout Machine, lease: Int, name: String) -> (target: Int, connection: String) {
        guard case .connect(let attempt) = pool.lease(lease, now: self.now) else {
            Issue.record("expected a connect")
            return (-1, name)
        }
        #expect(pool.connected(attempt.id, name) == .deliver(name, to: lease, reused: false))
        return (attempt.target, name)
    }

    @Test("a keep-alive pool with idle connections still spreads requests over every URL (round robin per request)")
    func roundRobinPerRequest() {
        var pool = Machine(targetCount: 2, maxConnections: 8)
        let first = self.open(&pool, lease: 0, name: "a")
        #expect(first.target == 0)
        #expect(pool.released("a", target: 0, reusable: true) == .none)
        // The idle connection is to URL 0, yet the next request goes to URL 1.
        guard case .connect(let attempt) = pool.lease(1, now: self.now) else {
            Issue.record("expected a connect to the second URL")
            return
        }
        #expect(attempt.target == 1)
        #expect(pool.connected(attempt.id, "b") == .deliver("b", to: 1, reused: false))
        #expect(pool.released("b", target: 1, reusable: true) == .none)
        // From now on each request alternates between the two warm connections.
        var delivered: [String] = []
        for lease in 2..<8 {
            guard case .deliver(let connection, to: lease, reused: true) = pool.lease(lease, now: self.now) else {
                Issue.record("expected an idle connection")
                return
            }
            delivered.append(connection)
            _ = pool.released(connection, target: connection == "a" ? 0 : 1, reusable: true)
        }
        #expect(delivered == ["a", "b", "a", "b", "a", "b"])
        #expect(pool.openCount == 2)
    }

    @Test("idle connections of a target are reused last in, first out")
    func lifo() {
        var pool = Machine(targetCount: 1, maxConnections: 4)
        _ = self.open(&pool, lease: 0, name: "old")
        _ = self.open(&pool, lease: 1, name: "new")
        _ = pool.released("old", target: 0, reusable: true)
        _ = pool.released("new", target: 0, reusable: true)
        #expect(pool.lease(2, now: self.now) == .deliver("new", to: 2, reused: true))
    }

    @Test("a full pool waits, then hands the next released connection to the longest waiter")
    func waitersAreServedInOrder() {
        var pool = Machine(targetCount: 1, maxConnections: 1)
        _ = self.open(&pool, lease: 0, name: "a")
        #expect(pool.lease(1, now: self.now) == .wait(1))
        #expect(pool.lease(2, now: self.now) == .wait(2))
        #expect(pool.waitingCount == 2)
        #expect(pool.released("a", target: 0, reusable: true) == .deliver("a", to: 1, reused: true))
        #expect(pool.waitTimedOut(2) == .fail(2, .busy))
        #expect(pool.waitTimedOut(2) == .none)
        #expect(pool.waitingCount == 0)
    }

    @Test("a connection that cannot be reused is closed; its close lets a waiter connect")
    func unusableConnectionsAreClosed() {
        var pool = Machine(targetCount: 1, maxConnections: 1)
        _ = self.open(&pool, lease: 0, name: "a")
        #expect(pool.lease(1, now: self.now) == .wait(1))
        #expect(pool.released("a", target: 0, reusable: false) == .close("a"))
        guard case .connect(let attempt) = pool.closed("a", target: 0, now: self.now) else {
            Issue.record("expected a connect for the waiter")
            return
        }
        #expect(pool.connected(attempt.id, "b") == .deliver("b", to: 1, reused: false))
        #expect(pool.openCount == 1)
    }

    @Test("an idle connection closed by the backend leaves the idle list")
    func idleConnectionClosed() {
        var pool = Machine(targetCount: 1, maxConnections: 2)
        _ = self.open(&pool, lease: 0, name: "a")
        _ = pool.released("a", target: 0, reusable: true)
        #expect(pool.idleCount == 1)
        #expect(pool.closed("a", target: 0, now: self.now) == .none)
        #expect(pool.idleCount == 0)
        #expect(pool.openCount == 0)
        guard case .connect = pool.lease(1, now: self.now) else {
            Issue.record("expected a new connection")
            return
        }
    }

    @Test("a full pool closes another URL's idle connection to make room for the chosen URL")
    func makesRoomOnAnotherTarget() {
        var pool = Machine(targetCount: 2, maxConnections: 1)
        _ = self.open(&pool, lease: 0, name: "a")
        _ = pool.released("a", target: 0, reusable: true)
        guard case .closeAndConnect("a", let attempt) = pool.lease(1, now: self.now) else {
            Issue.record("expected the idle connection to URL 0 to make room")
            return
        }
        #expect(attempt.target == 1)
        #expect(pool.openCount == 2)  // until the victim's close is reported
        #expect(pool.closed("a", target: 0, now: self.now) == .none)
        #expect(pool.openCount == 1)
        #expect(pool.connected(attempt.id, "b") == .deliver("b", to: 1, reused: false))
    }

    @Test("a refused connect tries the next URL; URLs out of rotation are skipped until they are back")
    func connectFailureMovesOnAndSkipsURLsOutOfRotation() {
        var pool = Machine(targetCount: 2, maxConnections: 4)
        guard case .connect(let first) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect")
            return
        }
        #expect(first.target == 0)
        // The shell reports the failure to `TargetAvailability`, which takes URL 0 out.
        pool.setOutOfRotation(0b01)
        guard case .connect(let second) = pool.connectFailed(first.id, now: self.now) else {
            Issue.record("expected a connect to the other URL")
            return
        }
        #expect(second.target == 1)
        #expect(pool.connected(second.id, "b") == .deliver("b", to: 0, reused: false))
        _ = pool.released("b", target: 1, reusable: true)
        // URL 0 is out: both next requests use URL 1.
        #expect(pool.lease(1, now: self.now + .seconds(1)) == .deliver("b", to: 1, reused: true))
        _ = pool.released("b", target: 1, reusable: true)
        #expect(pool.lease(2, now: self.now + .seconds(1)) == .deliver("b", to: 2, reused: true))
        _ = pool.released("b", target: 1, reusable: true)
        // Back in rotation, URL 0 is chosen again.
        pool.setOutOfRotation(0)
        guard case .connect(let again) = pool.lease(3, now: self.now + .seconds(3)) else {
            Issue.record("expected URL 0 to be tried again")
            return
        }
        #expect(again.target == 0)
    }

    @Test("when every URL is out of rotation, requests still go to all of them (panic routing)")
    func panicRouting() {
        var pool = Machine(targetCount: 2, maxConnections: 4)
        pool.setOutOfRotation(0b11)
        guard case .connect(let first) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect")
            return
        }
        guard case .connect(let second) = pool.lease(1, now: self.now) else {
            Issue.record("expected a connect")
            return
        }
        #expect(Set([first.target, second.target]) == [0, 1])
    }

    @Test("when every URL refuses, the lease fails as unreachable and the slot is freed")
    func everyTargetRefuses() {
        var pool = Machine(targetCount: 2, maxConnections: 4)
        guard case .connect(let first) = pool.lease(0, now: self.now),
            case .connect(let second) = pool.connectFailed(first.id, now: self.now)
        else {
            Issue.record("expected two attempts")
            return
        }
        #expect(pool.connectFailed(second.id, now: self.now) == .fail(0, .unreachable))
        #expect(pool.openCount == 0)
    }

    @Test("a connection opened for a cancelled lease goes to the idle list, or to a waiter")
    func cancelledLease() {
        var pool = Machine(targetCount: 1, maxConnections: 1)
        guard case .connect(let attempt) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect")
            return
        }
        #expect(pool.lease(1, now: self.now) == .wait(1))
        pool.cancel(0)
        #expect(pool.connected(attempt.id, "a") == .deliver("a", to: 1, reused: false))
        var idlePool = Machine(targetCount: 1, maxConnections: 1)
        guard case .connect(let idleAttempt) = idlePool.lease(0, now: self.now) else {
            Issue.record("expected a connect"); return
        }
        idlePool.cancel(0)
        #expect(idlePool.connected(idleAttempt.id, "a") == .none)
        #expect(idlePool.idleCount == 1)
        #expect(idlePool.lease(1, now: self.now) == .deliver("a", to: 1, reused: false))
    }

    @Test("a connection returned unused keeps its reuse flag")
    func returnedUnused() {
        var pool = Machine(targetCount: 1, maxConnections: 2)
        _ = self.open(&pool, lease: 0, name: "a")
        #expect(pool.returnedUnused("a", target: 0, reused: false, reusable: true) == .none)
        #expect(pool.lease(1, now: self.now) == .deliver("a", to: 1, reused: false))
        #expect(pool.returnedUnused("a", target: 0, reused: true, reusable: false) == .close("a"))
    }

    @Test("shutting down closes idle connections, fails waiters and refuses new leases")
    func shutDown() {
        var pool = Machine(targetCount: 1, maxConnections: 2)
        _ = self.open(&pool, lease: 0, name: "a")
        _ = self.open(&pool, lease: 1, name: "b")
        _ = pool.released("a", target: 0, reusable: true)
        #expect(pool.shutDown() == .shutDown(close: ["a"], fail: []))
        #expect(pool.lease(4, now: self.now) == .fail(4, .unreachable))
        #expect(pool.released("b", target: 0, reusable: true) == .close("b"))
        var waiting = Machine(targetCount: 1, maxConnections: 1)
        _ = self.open(&waiting, lease: 0, name: "a")
        _ = waiting.lease(1, now: self.now)
        #expect(waiting.shutDown() == .shutDown(close: [], fail: [1]))
    }

    @Test("a connection finishing its connect after shutdown is closed")
    func connectAfterShutdown() {
        var pool = Machine(targetCount: 1, maxConnections: 1)
        guard case .connect(let attempt) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect"); return
        }
        _ = pool.shutDown()
        #expect(pool.connected(attempt.id, "a") == .close("a"))
    }

    // MARK: HTTP/2 stream slots

    private func multiplexed(targets: Int = 1, max: Int = 4) -> Machine {
        Machine(targetCount: targets, maxConnections: max, mode: .multiplexed)
    }

    @Test("HTTP/2: concurrent first requests share the one connection being opened")
    func firstRequestsShareAConnection() {
        var pool = self.multiplexed()
        guard case .connect(let attempt) = pool.lease(0, now: self.now) else {
            Issue.record("the first lease connects")
            return
        }
        #expect(pool.lease(1, now: self.now) == .wait(1))
        #expect(pool.lease(2, now: self.now) == .wait(2))
        #expect(pool.openCount == 1)
        #expect(pool.connected(attempt.id, "h2") == .deliverAll("h2", to: [0, 1, 2]))
        #expect(pool.streamCount == 3)
        // Later leases get a stream on it at once.
        #expect(pool.lease(3, now: self.now) == .deliver("h2", to: 3, reused: true))
    }

    @Test("HTTP/2: a full connection (peer's SETTINGS_MAX_CONCURRENT_STREAMS) makes the next lease open another")
    func fullConnectionOpensAnother() {
        var pool = self.multiplexed()
        guard case .connect(let attempt) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect"); return
        }
        _ = pool.connected(attempt.id, "a")
        #expect(pool.streamCapacityChanged("a", target: 0, to: 2) == .none)
        #expect(pool.lease(1, now: self.now) == .deliver("a", to: 1, reused: true))
        guard case .connect = pool.lease(2, now: self.now) else {
            Issue.record("a full connection makes room for a new one")
            return
        }
        #expect(pool.openCount == 2)
    }

    @Test("HTTP/2: a closed stream's slot goes to the longest waiter; a larger capacity serves waiters at once")
    func slotsServeWaiters() {
        var pool = self.multiplexed(max: 1)
        guard case .connect(let attempt) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect"); return
        }
        _ = pool.connected(attempt.id, "a")
        _ = pool.streamCapacityChanged("a", target: 0, to: 1)
        #expect(pool.lease(1, now: self.now) == .wait(1))
        #expect(pool.lease(2, now: self.now) == .wait(2))
        #expect(pool.streamClosed("a", target: 0) == .deliver("a", to: 1, reused: true))
        #expect(pool.streamCapacityChanged("a", target: 0, to: 10) == .deliver("a", to: 2, reused: true))
        #expect(pool.streamCount == 2)
    }

    @Test("HTTP/2: GOAWAY stops new streams; the connection closes with its last stream")
    func goAwayDrains() {
        var pool = self.multiplexed()
        guard case .connect(let attempt) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect"); return
        }
        _ = pool.connected(attempt.id, "a")
        #expect(pool.goAwayReceived("a", target: 0) == .none)
        guard case .connect = pool.lease(1, now: self.now) else {
            Issue.record("a draining connection takes no new stream")
            return
        }
        #expect(pool.streamClosed("a", target: 0) == .close("a"))
        #expect(pool.closed("a", target: 0, now: self.now) == .none)
    }

    @Test("HTTP/2: when the only connect fails, every lease that waited for it fails as unreachable")
    func failedConnectFailsItsWaiters() {
        var pool = self.multiplexed()
        guard case .connect(let attempt) = pool.lease(0, now: self.now) else {
            Issue.record("expected a connect"); return
        }
        _ = pool.lease(1, now: self.now)
        #expect(pool.connectFailed(attempt.id, now: self.now) == .failAll([0, 1], .unreachable))
        #expect(pool.openCount == 0)
        #expect(pool.waitingCount == 0)
    }
}
