import NIOCore
import Testing

@testable import AuthGateway

@Suite("HTTP/2 flow control: InboundWindow, OutboundBacklog")
struct FlowControlTests {
    @Test func aStreamWindowIsGivenBackOnceHalfIsConsumed() {
        var window = InboundWindow(target: 65_535)
        let r1 = window.received(16_384)
        #expect(r1 == nil)
        let r2 = window.received(16_383)
        #expect(r2 == nil, "32 767 bytes: just under half")
        let r3 = window.received(1)
        #expect(r3 == 32_768, "half consumed: all of it back in one WINDOW_UPDATE")
        #expect(window.unacknowledged == 0)
        let r4 = window.received(100)
        #expect(r4 == nil)
    }

    @Test func aWithheldWindowGivesNothingBackUntilResumed() {
        var window = InboundWindow(target: 65_535)
        window.withhold()
        let r5 = window.received(40_000)
        #expect(r5 == nil)
        let r6 = window.received(25_535)
        #expect(r6 == nil, "the whole window used: the client must stop")
        #expect(window.unacknowledged == 65_535)
        let r7 = window.resume()
        #expect(r7 == 65_535)
        let r8 = window.resume()
        #expect(r8 == nil, "nothing left to give back")
    }

    @Test func resumingUnderHalfAWindowWaitsForMore() {
        var window = InboundWindow(target: 65_535)
        window.withhold()
        let r9 = window.received(1_000)
        #expect(r9 == nil)
        let r10 = window.resume()
        #expect(r10 == nil, "the client still has most of its window")
        let r11 = window.received(31_768)
        #expect(r11 == 32_768)
    }

    @Test(arguments: [(65_535, nil), (32_768, nil), (32_767, 32_768), (0, 65_535), (-10, 65_545)] as [(Int, Int?)])
    func theConnectionWindowIsRefilledWhenHalfUsed(size: Int, increment: Int?) {
        #expect(InboundWindow.connectionIncrement(windowSize: size, target: 65_535) == increment)
    }

    @Test func aBacklogPastTheHighWatermarkStopsTheStreamUntilTheLowOne() {
        var backlog = OutboundBacklog(highWatermark: 100, lowWatermark: 50)
        let r12 = backlog.wrote(100)
        #expect(!r12)
        #expect(backlog.isWritable)
        let r13 = backlog.wrote(1)
        #expect(r13, "past the high watermark")
        #expect(!backlog.isWritable)
        let r14 = backlog.wrote(10)
        #expect(!r14, "already not writable: no second change")
        let r15 = backlog.sent(60)
        #expect(!r15, "51 left: above the low watermark")
        let r16 = backlog.sent(1)
        #expect(r16, "50 left: writable again")
        #expect(backlog.isWritable)
        let r17 = backlog.sent(1_000)
        #expect(!r17)
        #expect(backlog.pending == 0, "never below zero")
    }
}

@Suite("HTTP/2 connection timer: StreamDeadlines")
struct StreamDeadlinesTests {
    let now = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    let granularity = TimeAmount.seconds(10)

    @Test func theFirstDeadlineArmsTheTimerNoLaterThanTheGranularity() {
        var timer = StreamDeadlines()
        let r18 = timer.deadlineSet(self.now + .seconds(30), now: self.now, granularity: self.granularity)
        #expect(r18 == self.now + .seconds(10))
        #expect(timer.armedFor == self.now + .seconds(10))
    }

    @Test func laterDeadlinesNeedNoNewTimerAndAnEarlierOneDoes() {
        var timer = StreamDeadlines()
        _ = timer.deadlineSet(self.now + .seconds(30), now: self.now, granularity: self.granularity)
        let r19 = timer.deadlineSet(self.now + .seconds(60), now: self.now, granularity: self.granularity)
        #expect(r19 == nil)
        let r20 = timer.deadlineSet(self.now + .seconds(10), now: self.now, granularity: self.granularity)
        #expect(r20 == nil, "due when the armed timer fires")
        let r21 = timer.deadlineSet(self.now + .milliseconds(300), now: self.now, granularity: self.granularity)
        #expect(r21 == self.now + .milliseconds(300))
        #expect(timer.armedFor == self.now + .milliseconds(300))
    }

    @Test func afterFiringTheTimerFollowsTheEarliestPendingDeadline() {
        var timer = StreamDeadlines()
        _ = timer.deadlineSet(self.now + .seconds(5), now: self.now, granularity: self.granularity)
        let fired = self.now + .seconds(5)
        let r22 = timer.fired(earliestPending: fired + .seconds(2), now: fired, granularity: self.granularity)
        #expect(r22 == fired + .seconds(2))
        let r23 = timer.fired(earliestPending: fired + .seconds(60), now: fired, granularity: self.granularity)
        #expect(r23 == fired + .seconds(10))
        let r24 = timer.fired(earliestPending: nil, now: fired, granularity: self.granularity)
        #expect(r24 == nil)
        #expect(timer.armedFor == nil, "no stream waits: the timer rests")
        let r25 = timer.deadlineSet(fired + .seconds(1), now: fired, granularity: self.granularity)
        #expect(r25 == fired + .seconds(1))
    }
}
