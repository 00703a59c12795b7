import NIOConcurrencyHelpers
import Testing
import AuthGatewayTesting

/// The harness's awaited cleanups: `atTestEnd` cleanups run when the test ends, last first,
/// awaited, also when the test throws; `withCleanup` runs its cleanup after the body either way.
@Suite("Test cleanups (harness)")
struct CleanupTests {
    struct Thrown: Error {}

    @Test func atTestEndCleanupsRunLastFirstAndAreAwaitedWhenTheScopeEnds() async throws {
        let events = NIOLockedValueBox<[String]>([])
        let scope = AwaitsCleanupsTrait()
        let test = try #require(Test.current)
        try await scope.provideScope(for: test, testCase: Test.Case.current) {
            atTestEnd {
                // A slow stop: the scope must wait for it.
                try? await Task.sleep(for: .milliseconds(50))
                events.withLockedValue { $0.append("first registered") }
            }
            atTestEnd { events.withLockedValue { $0.append("second registered") } }
            events.withLockedValue { $0.append("body") }
        }
        #expect(events.withLockedValue { $0 } == ["body", "second registered", "first registered"])

        events.withLockedValue { $0 = [] }
        await #expect(throws: Thrown.self) {
            try await scope.provideScope(for: test, testCase: Test.Case.current) {
                atTestEnd { events.withLockedValue { $0.append("cleanup") } }
                throw Thrown()
            }
        }
        #expect(events.withLockedValue { $0 } == ["cleanup"])
    }

    @Test func withCleanupRunsAfterTheBodyEitherWay() async throws {
        let events = NIOLockedValueBox<[String]>([])
        let value = await withCleanup({ events.withLockedValue { $0.append("cleanup") } }) {
            events.withLockedValue { $0.append("body") }
            return 42
        }
        #expect(value == 42)
        await #expect(throws: Thrown.self) {
            try await withCleanup({ events.withLockedValue { $0.append("cleanup after throw") } }) { () async throws in
                throw Thrown()
            }
        }
        #expect(events.withLockedValue { $0 } == ["body", "cleanup", "cleanup after throw"])
    }
}
