import Testing

@testable import AuthGateway

/// `KeyPublisher`: a new key snapshot reaches every event loop's worker, on its loop.
@Suite("KeyPublisher", .awaitsCleanups)
struct KeyPublisherTests {
    private static func keyGenerations(_ application: GatewayApplication) async throws -> [UInt64] {
        var generations: [UInt64] = []
        for worker in application.workers {
            generations.append(try await worker.eventLoop.submit { worker.value.keys.generation }.get())
        }
        return generations
    }

    @Test func aPublishedSnapshotReachesEveryAttachedWorker() async throws {
        let application = try await GatewayApplication.make(
            configuration: try ApplicationTesting.configuration { $0["eventLoopThreads"] = 2 })
        atTestEnd { await application.shutdown() }
        let before = try await Self.keyGenerations(application)
        let publisher = KeyPublisher()

        // Before the workers are attached a snapshot goes nowhere (the key store is made first).
        publisher.publish(KeySnapshot(generation: 99, issuers: []))
        #expect(try await Self.keyGenerations(application) == before)

        publisher.attach(application.workers)
        publisher.publish(KeySnapshot(generation: 100, issuers: []))
        // Each loop applies it in order: a task submitted after it sees it.
        #expect(try await Self.keyGenerations(application) == [100, 100])
    }
}
