import NIOCore
import Testing

@testable import AuthGateway

/// `ConnectionDeadlines` without a clock or a timer: `now` is passed in.
@Suite("ConnectionDeadlines")
struct ConnectionDeadlinesTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    private let limits = ConnectionDeadlines.Limits(
        requestHeader: .seconds(10), idle: .seconds(60), response: .seconds(30), granularity: .seconds(10))

    @Test("the first update arms the timer at most one granularity ahead")
    func firstArm() {
        var deadlines = ConnectionDeadlines()
        #expect(deadlines.update(for: .idle, isIdle: true, now: start, limits: limits) == .arm(start + .seconds(10)))
        #expect(deadlines.deadline == start + .seconds(60))
    }

    @Test("an ordinary request's deadline changes (idle → response → idle) arm no new timer")
    func noRearmPerRequest() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.update(for: .idle, isIdle: true, now: start, limits: limits)
        let later = start + .milliseconds(5)
        deadlines.headBytesArrived(now: later, limits: limits)
        deadlines.headCompleted()
        #expect(deadlines.update(for: .response, isIdle: false, now: later, limits: limits) == .none)
        #expect(deadlines.update(for: .idle, isIdle: true, now: later + .milliseconds(1), limits: limits) == .none)
    }

    @Test("an earlier deadline replaces the armed timer")
    func earlierDeadline() {
        var deadlines = ConnectionDeadlines()
        let short = ConnectionDeadlines.Limits(
            requestHeader: .seconds(10), idle: .seconds(60), response: .seconds(2), granularity: .seconds(10))
        _ = deadlines.update(for: .idle, isIdle: true, now: start, limits: short)
        #expect(deadlines.update(for: .response, isIdle: false, now: start, limits: short) == .arm(start + .seconds(2)))
    }

    @Test("a timer that fires early re-arms for the deadline; then the deadline expires")
    func rearmThenExpire() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.update(for: .idle, isIdle: true, now: start, limits: limits)
        #expect(
            deadlines.timerFired(now: start + .seconds(10), isIdle: true, granularity: .seconds(10))
                == .rearm(start + .seconds(20)))
        #expect(deadlines.timerFired(now: start + .seconds(60), isIdle: true, granularity: .seconds(10)) == .timedOut)
        #expect(deadlines.deadline == nil)
    }

    @Test("a head that does not complete within requestHeaderSeconds of its first byte is slow headers (408)")
    func slowHeaders() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.update(for: .idle, isIdle: true, now: start, limits: limits)
        deadlines.headBytesArrived(now: start + .seconds(1), limits: limits)
        // More bytes of the same head do not restart its clock.
        deadlines.headBytesArrived(now: start + .seconds(5), limits: limits)
        #expect(deadlines.deadline == start + .seconds(11))
        #expect(deadlines.update(for: .idle, isIdle: true, now: start + .seconds(5), limits: limits) == .none)
        #expect(
            deadlines.timerFired(now: start + .seconds(10), isIdle: true, granularity: .seconds(10))
                == .rearm(start + .seconds(11)))
        #expect(
            deadlines.timerFired(now: start + .seconds(11), isIdle: true, granularity: .seconds(10)) == .slowHeaders)
    }

    @Test("nothing is due once closed")
    func closed() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.update(for: .idle, isIdle: true, now: start, limits: limits)
        deadlines.close()
        #expect(deadlines.timerFired(now: start + .seconds(100), isIdle: true, granularity: .seconds(10)) == .none)
        #expect(deadlines.update(for: .idle, isIdle: true, now: start, limits: limits) == .none)
    }
}

@Suite("ClientResponseFraming")
struct ClientResponseFramingTests {
    @Test("an unsized body goes chunked to HTTP/1.1 and close-delimited to HTTP/1.0")
    func unsized() {
        #expect(
            ClientResponseFraming.decide(
                upstream: .chunked, clientVersion: .http1_1, clientKeepAlive: true, mustClose: false)
                == .init(chunked: true, close: false))
        #expect(
            ClientResponseFraming.decide(
                upstream: .untilClose, clientVersion: .http1_1, clientKeepAlive: true, mustClose: false)
                == .init(chunked: true, close: false))
        #expect(
            ClientResponseFraming.decide(
                upstream: .chunked, clientVersion: .http1_0, clientKeepAlive: true, mustClose: false)
                == .init(chunked: false, close: true))
    }

    @Test("a sized body keeps the connection unless the client or a drain ends it")
    func sized() {
        #expect(
            ClientResponseFraming.decide(
                upstream: .contentLength(3), clientVersion: .http1_0, clientKeepAlive: true, mustClose: false)
                == .init(chunked: false, close: false))
        #expect(
            ClientResponseFraming.decide(
                upstream: .none, clientVersion: .http1_1, clientKeepAlive: false, mustClose: false)
                == .init(chunked: false, close: true))
        #expect(
            ClientResponseFraming.decide(
                upstream: .contentLength(3), clientVersion: .http1_1, clientKeepAlive: true, mustClose: true)
                == .init(chunked: false, close: true))
    }
}

/// A long-lived stream's credential deadline on the connection's one timer (docs/streams.md).
@Suite("ConnectionDeadlines: a stream's credential")
struct ConnectionCredentialDeadlineTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    private let limits = ConnectionDeadlines.Limits(
        requestHeader: .seconds(10), idle: .seconds(60), response: .seconds(30), granularity: .seconds(10))

    @Test("a credential deadline earlier than the armed timer re-arms it; a later one arms nothing")
    func arming() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.update(for: .idle, isIdle: false, now: start, limits: limits)
        #expect(deadlines.armedFor == start + .seconds(10))
        #expect(
            deadlines.setCredentialDeadline(start + .seconds(3), now: start, granularity: .seconds(10))
                == .arm(start + .seconds(3)))
        var later = ConnectionDeadlines()
        _ = later.update(for: .idle, isIdle: false, now: start, limits: limits)
        #expect(later.setCredentialDeadline(start + .seconds(45), now: start, granularity: .seconds(10)) == .none)
    }

    @Test("the credential fires first, even with the state's deadline also passed; the state's is kept")
    func credentialFirst() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.update(for: .response, isIdle: false, now: start, limits: limits)
        _ = deadlines.setCredentialDeadline(start + .seconds(5), now: start, granularity: .seconds(10))
        #expect(
            deadlines.timerFired(now: start + .seconds(40), isIdle: false, granularity: .seconds(10))
                == .credentialExpired)
        #expect(deadlines.credentialDeadline == nil)
        #expect(deadlines.deadline == start + .seconds(30))
        #expect(deadlines.timerFired(now: start + .seconds(40), isIdle: false, granularity: .seconds(10)) == .timedOut)
    }

    @Test("a timer that fires before the credential's deadline re-arms for it, not beyond")
    func rearmsForCredential() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.setCredentialDeadline(start + .seconds(25), now: start, granularity: .seconds(10))
        #expect(deadlines.armedFor == start + .seconds(10))
        #expect(
            deadlines.timerFired(now: start + .seconds(10), isIdle: false, granularity: .seconds(10))
                == .rearm(start + .seconds(20)))
        #expect(
            deadlines.timerFired(now: start + .seconds(20), isIdle: false, granularity: .seconds(10))
                == .rearm(start + .seconds(25)))
        #expect(
            deadlines.timerFired(now: start + .seconds(25), isIdle: false, granularity: .seconds(10))
                == .credentialExpired)
    }

    @Test("a stream that ended leaves nothing to fire for; a closed connection ignores a credential")
    func cleared() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.setCredentialDeadline(start + .seconds(2), now: start, granularity: .seconds(10))
        _ = deadlines.setCredentialDeadline(nil, now: start, granularity: .seconds(10))
        #expect(deadlines.timerFired(now: start + .seconds(2), isIdle: false, granularity: .seconds(10)) == .none)
        deadlines.close()
        #expect(deadlines.setCredentialDeadline(start + .seconds(1), now: start, granularity: .seconds(10)) == .none)
    }
}
