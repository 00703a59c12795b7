import NIOCore
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The queue between requests and the shared-state service: jobs run in the service's task,
/// a finished queue refuses new ones, and jobs still queued when the service is cancelled run
/// all the same (cancelled), so that no request waits forever.
@Suite("SharedStateJobs", .timeLimit(.minutes(1)))
struct SharedStateJobsTests {
    /// A DPoP job whose promise tells whether it ran cancelled.
    static func job(_ index: Int, on loop: EventLoop) -> (SharedStateJob, TokenDigest, EventLoopFuture<Bool>) {
        let digest = TokenDigest(of: "proof-\(index)"[...])
        let promise = loop.makePromise(of: Bool.self)
        return (.recordDPoPProof(digest, keepMilliseconds: 1000, firstUse: promise), digest, promise.futureResult)
    }

    /// Answers each job with whether its task was cancelled.
    static let perform: @Sendable (SharedStateJob) async -> Void = { job in
        switch job {
        case .recordDPoPProof(_, _, let firstUse): firstUse.succeed(Task.isCancelled)
        case .refresh, .exchange, .introspection, .sessionRead, .sessionRefresh, .sessionWrites, .sessionResync:
            Issue.record("only DPoP jobs are queued here")
        }
    }

    @Test func queuedJobsRunAndAFinishedQueueRefusesNewOnes() async throws {
        let jobs = SharedStateJobs(shardCount: 4)
        let loop = TestGroup.shared.any()
        let runner = Task { await jobs.run(Self.perform) }
        var answers: [EventLoopFuture<Bool>] = []
        for index in 0..<20 {
            let (job, digest, answer) = Self.job(index, on: loop)
            #expect(jobs.enqueue(job, key: digest))
            answers.append(answer)
        }
        for answer in answers { #expect(try await answer.get() == false, "ran, not cancelled") }
        jobs.finish()
        let (late, digest, answer) = Self.job(99, on: loop)
        #expect(!jobs.enqueue(late, key: digest), "refused once finished")
        if case .recordDPoPProof(_, _, let promise) = late { promise.succeed(true) }
        _ = try await answer.get()
        await runner.value
    }

    @Test func jobsQueuedWhenTheServiceIsCancelledStillRunCancelled() async throws {
        let jobs = SharedStateJobs(shardCount: 2)
        let loop = TestGroup.shared.any()
        var answers: [EventLoopFuture<Bool>] = []
        for index in 0..<10 {
            let (job, digest, answer) = Self.job(index, on: loop)
            #expect(jobs.enqueue(job, key: digest))
            answers.append(answer)
        }
        let runner = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await jobs.run(Self.perform)
        }
        for answer in answers { #expect(try await answer.get() == true, "ran, cancelled") }
        await runner.value
        let (late, digest, _) = Self.job(99, on: loop)
        #expect(!jobs.enqueue(late, key: digest), "a cancelled service takes no more jobs")
        if case .recordDPoPProof(_, _, let promise) = late { promise.succeed(true) }
    }
}

/// When the shared-state service works, and `shutdown()`'s wait for it.
@Suite("SharedStateLifecycle", .timeLimit(.minutes(1)))
struct SharedStateLifecycleTests {
    @Test func aStopBeforeAnyRunMeansNoRunWorks() async {
        let lifecycle = SharedStateLifecycle()
        lifecycle.requestStop()
        #expect(!lifecycle.begin())
        await lifecycle.stopped()
    }

    @Test func aRunWorksUntilAStopIsRequestedAndTheStopWaitsForItsEnd() async {
        let lifecycle = SharedStateLifecycle()
        #expect(lifecycle.begin())
        #expect(!lifecycle.begin(), "only one run works")
        let run = Task {
            await lifecycle.untilStopRequested()
            lifecycle.finish()
        }
        lifecycle.requestStop()
        lifecycle.requestStop()
        await lifecycle.stopped()
        await run.value
        await lifecycle.stopped()
        #expect(!lifecycle.begin())
    }
}
