import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `KeyStartup`: the start-up fetch of each remote key set (docs/operations.md: once), which
/// `KeyRefreshService` waits for before scheduling refreshes.
@Suite("KeyStartup", .awaitsCleanups)
struct KeyStartupTests {
    struct StartFailed: Error {}

    /// An application whose one issuer takes its keys from `jwksURL` (not started).
    private static func application(jwksURL: String) async throws -> GatewayApplication {
        let configuration = try ApplicationTesting.configuration { document in
            document["tokens"] = [
                "issuers": [
                    [
                        "issuer": .string(TestKeys.issuer), "audiences": [.string(TestKeys.audience)],
                        "jwksURL": .string(jwksURL),
                    ]
                ]
            ]
        }
        return try await GatewayApplication.make(configuration: configuration)
    }

    @Test func theStartUpFetchIsMadeOnceAtTheStartAndItsOutcomeAwaited() async throws {
        let refusing = try RefusingPort()
        atTestEnd { refusing.close() }
        let application = try await Self.application(jwksURL: "http://127.0.0.1:\(refusing.port)/jwks")
        atTestEnd { await application.shutdown() }
        let startup = application.keyStartup

        // A waiter that comes before the start waits for it.
        async let early = startup.startupFetch(issuer: TestKeys.issuer)
        startup.begin()

        // The JWKS cannot be fetched (the port refuses): the fetch reports false, not an error.
        #expect(try await early == false)
        #expect(try await startup.startupFetch(issuer: TestKeys.issuer) == false)
        // An issuer without a start-up fetch: nil (the refresh service fetches it itself).
        #expect(try await startup.startupFetch(issuer: "https://other.test") == nil)
        #expect(!application.isReady)
    }

    @Test func aFailedStartFailsEveryWaiterAndTheFirstSettlementWins() async throws {
        let refusing = try RefusingPort()
        atTestEnd { refusing.close() }
        let application = try await Self.application(jwksURL: "http://127.0.0.1:\(refusing.port)/jwks")
        atTestEnd { await application.shutdown() }
        let startup = application.keyStartup

        // Waiters racing the failure, for the remote issuer and for one without a start-up
        // fetch, each on a task of its own (whether one is already waiting or asks just after,
        // it must fail the same way).
        let early = (0..<4).map { index in
            Task {
                try await startup.startupFetch(issuer: index.isMultiple(of: 2) ? TestKeys.issuer : "https://other.test")
            }
        }
        startup.settle(with: StartFailed())
        // A later `begin` settles nothing: the first settlement (the failure) stands.
        startup.begin()
        // Waiters that come after it.
        let late = (0..<4).map { _ in Task { try await startup.startupFetch(issuer: TestKeys.issuer) } }

        for (index, waiter) in (early + late).enumerated() {
            await #expect(throws: StartFailed.self, "waiter \(index)") { try await waiter.value }
        }
    }

    @Test func aFetchWithStaticKeysFetchesNothing() async throws {
        let application = try await GatewayApplication.make(configuration: try ApplicationTesting.configuration())
        atTestEnd { await application.shutdown() }

        application.keyStartup.begin()

        #expect(try await application.keyStartup.startupFetch(issuer: TestKeys.issuer) == nil)
    }
}
