import NIOCore
import NIOEmbedded
import Testing

@testable import AuthGateway

/// `LocalRefreshStore`: one auth-service call per old refresh token, its definite outcome
/// remembered for the grace period, "unavailable" never.
@Suite("LocalRefreshStore")
struct RefreshStoreTests {
    static let refreshed = RefreshOutcome.refreshed(accessToken: "a2", refreshToken: "r2")

    @Test func concurrentRefreshesMakeOneCallAndLateOnesAreRemembered() throws {
        let loop = EmbeddedEventLoop()
        let now = ClockBox()
        let store = LocalRefreshStore(capacity: 16) { now.value }
        let key = TokenDigest(of: "rt-1"[...])
        let call = loop.makePromise(of: RefreshOutcome.self)
        var calls = 0
        let joins = ClockBox()
        let refresh = {
            store.outcome(
                for: key, graceSeconds: 30, callTimeoutMilliseconds: 1000, now: now.value, eventLoop: loop,
                joined: { joins.value += 1 }
            ) {
                calls += 1
                return call.futureResult
            }
        }
        let led = refresh()
        let joined = refresh()
        call.succeed(Self.refreshed)
        #expect(try led.wait() == (Self.refreshed, .led))
        #expect(try joined.wait() == (Self.refreshed, .joined))
        now.value = 29.9
        #expect(try refresh().wait() == (Self.refreshed, .remembered))
        #expect(calls == 1 && joins.value == 1)
        now.value = 30
        _ = refresh()
        #expect(calls == 2, "called again once the grace period is over")
    }

    @Test func unavailableIsNotRemembered() throws {
        let loop = EmbeddedEventLoop()
        let store = LocalRefreshStore(capacity: 16) { 0 }
        let key = TokenDigest(of: "rt-2"[...])
        var calls = 0
        for _ in 0..<2 {
            let outcome = store.outcome(
                for: key, graceSeconds: 30, callTimeoutMilliseconds: 1000, now: 0, eventLoop: loop, joined: {}
            ) {
                calls += 1
                return loop.makeFailedFuture(ChannelError.ioOnClosedChannel)
            }
            #expect(try outcome.wait() == (.unavailable, .led))
        }
        #expect(calls == 2)
        #expect(store.count == 0)
    }

    /// A number the test changes (the clock, a count); the tests run on one thread.
    final class ClockBox: @unchecked Sendable {
        var value: Double = 0
    }
}
