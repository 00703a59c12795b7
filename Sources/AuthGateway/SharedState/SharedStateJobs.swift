import NIOCore

/// Work a request hands to the shared-state service instead of starting a task of its own:
/// `PostgresSharedState.run()` runs each job in a child task, so that `shutdown()` ends them
/// with the service and none completes a promise on a stopped event loop.
enum SharedStateJob: Sendable {
    /// A local leader's refresh through the shared table (`PostgresRefreshStore`).
    case refresh(SharedRefreshJob)
    /// A local leader's token exchange through the shared table (`PostgresExchangeStore`).
    case exchange(SharedExchangeJob)
    /// A DPoP proof's first use, recorded for every instance (`PostgresDPoPReplay`).
    case recordDPoPProof(TokenDigest, keepMilliseconds: Int64, firstUse: EventLoopPromise<Bool>)
    /// An introspection answer read from, or stored for, the other instances
    /// (`PostgresIntrospections`).
    case introspection(SharedIntrospectionJob)
    /// A browser session's row, for a handle this instance does not hold (or holds idle)
    /// (`PostgresSessionStore`).
    case sessionRead(SessionReadJob)
    /// Re-reads a session held here that another instance updated (new tokens).
    case sessionRefresh(TokenDigest)
    /// Writes the sessions' queued changes; one at a time (`SessionWriteQueue`).
    case sessionWrites
    /// Re-reads every session held, after the LISTEN connection (re)connected.
    case sessionResync
}

/// The queue between requests and the shared-state service: one unbounded `AsyncStream` per
/// shard, chosen by the job's token digest, so that event loops rarely meet on one stream's
/// lock and a request takes no global lock (docs/architecture.md). Queueing a job is one
/// `yield`; the service drains every shard.
final class SharedStateJobs: Sendable {
    private typealias Stream = AsyncStream<SharedStateJob>
    private let shards: [(stream: Stream, continuation: Stream.Continuation)]

    init(shardCount: Int = 16) {
        self.shards = (0..<max(1, shardCount)).map { _ in Stream.makeStream(bufferingPolicy: .unbounded) }
    }

    /// Queues `job`; false once the queue is finished (the service stopped): then nothing
    /// runs, and the caller goes on without the database.
    func enqueue(_ job: SharedStateJob, key: TokenDigest) -> Bool {
        let index = Int(UInt(bitPattern: key.hashValue) % UInt(self.shards.count))
        switch self.shards[index].continuation.yield(job) {
        case .enqueued:
            return true
        case .dropped, .terminated:
            return false
        @unknown default:
            return false
        }
    }

    /// Accepts no job from now on; those already queued still run.
    func finish() {
        for shard in self.shards { shard.continuation.finish() }
    }

    /// Runs every job, each in a child task, until the queue is finished and drained. When the
    /// calling task is cancelled the jobs still queued run too, cancelled from their start, so
    /// that each answers its request at once (every job handles cancellation).
    func run(_ perform: @escaping @Sendable (SharedStateJob) async -> Void) async {
        await withDiscardingTaskGroup { group in
            for shard in self.shards {
                group.addTask {
                    await withDiscardingTaskGroup { jobs in
                        for await job in shard.stream {
                            jobs.addTask { await perform(job) }
                        }
                    }
                }
            }
        }
    }
}
