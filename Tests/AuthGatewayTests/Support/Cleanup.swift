import NIOConcurrencyHelpers
import Testing

/// Awaited cleanup for what a test starts (gateways, servers, connections, shared states).
///
/// `defer { Task { await gateway.stop() } }` was not awaited: one test's servers kept running,
/// and taking the two cores, beside the next tests. `defer` cannot await, so a test registers
/// the cleanup instead —
///
///     let gateway = try await GatewayFixture.start()
///     atTestEnd { await gateway.stop() }
///
/// — and the suite's `.awaitsCleanups` trait runs every registered cleanup when the test (each
/// case of a parameterized test) ends, passed or failed, the last registered first (as `defer`
/// would), and awaits them before the test counts as finished.
///
/// For a helper whose resource must go before it returns (a connection per request), see
/// `withCleanup(_:_:)` (in `AuthGatewayTesting`).
func atTestEnd(sourceLocation: SourceLocation = #_sourceLocation, _ cleanup: @escaping @Sendable () async -> Void) {
    guard let cleanups = TestCleanups.current else {
        // A suite without the trait: still cleaned up, but the test fails so that it gets it.
        Issue.record(
            "atTestEnd outside a test with the .awaitsCleanups trait: its cleanup would not be awaited",
            sourceLocation: sourceLocation)
        Task { await cleanup() }
        return
    }
    cleanups.add(cleanup)
}

/// The cleanups one running test registered (`atTestEnd`).
final class TestCleanups: Sendable {
    @TaskLocal static var current: TestCleanups?

    private let cleanups = NIOLockedValueBox<[@Sendable () async -> Void]>([])

    func add(_ cleanup: @escaping @Sendable () async -> Void) {
        self.cleanups.withLockedValue { $0.append(cleanup) }
    }

    /// Runs and forgets every registered cleanup, the last registered first; one registered
    /// while they run (by a cleanup) runs too.
    func runAll() async {
        while let cleanup = self.cleanups.withLockedValue({ $0.popLast() }) {
            await cleanup()
        }
    }
}

/// The suite trait that gives each test a `TestCleanups` and awaits them when it ends.
struct AwaitsCleanupsTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> AwaitsCleanupsTrait? {
        // Each test function (each case of a parameterized one), not the suites around it.
        test.isSuite || testCase == nil ? nil : self
    }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let cleanups = TestCleanups()
        do {
            try await TestCleanups.$current.withValue(cleanups) { try await function() }
        } catch {
            await cleanups.runAll()
            throw error
        }
        await cleanups.runAll()
    }
}

extension Trait where Self == AwaitsCleanupsTrait {
    /// Every `atTestEnd` cleanup of each test of the suite is awaited when that test ends.
    static var awaitsCleanups: Self { Self() }
}
