import Logging
import Testing

@testable import AuthGateway

/// `BackendAvailabilities` (docs/forwarding.md): a backend's availability outlives a reload while
/// its URLs and checks are unchanged.
@Suite("BackendAvailabilities")
struct BackendAvailabilitiesTests {
    private static func configuration(_ backends: JSONObject) throws -> GatewayConfiguration {
        try ApplicationTesting.configuration { $0["backends"] = .object(backends) }
    }

    /// Updates `availabilities` for `backends`: what it returns is in the configuration's
    /// order (checked here), then by name for the assertions.
    private static func update(
        _ availabilities: BackendAvailabilities, _ backends: JSONObject
    ) throws -> [String: TargetAvailability] {
        let configuration = try Self.configuration(backends)
        let ordered = availabilities.update(for: configuration)
        #expect(ordered.map(\.name) == configuration.backends.map(\.name))
        return Dictionary(uniqueKeysWithValues: ordered.map { ($0.name, $0) })
    }

    @Test func aReloadKeepsAnUnchangedBackendsAvailabilityAndReplacesAChangedOne() throws {
        let availabilities = BackendAvailabilities(logger: Logger(label: "test"), metrics: ProcessMetrics())
        let first = try Self.update(
            availabilities,
            [
                "api": ["urls": ["http://127.0.0.1:9"]], "other": ["urls": ["http://127.0.0.1:10"]],
            ])
        let second = try Self.update(
            availabilities,
            [
                "api": ["urls": ["http://127.0.0.1:9"]], "other": ["urls": ["http://127.0.0.1:11"]],
            ])

        #expect(first.keys.sorted() == ["api", "other"])
        #expect(second["api"] === first["api"])
        #expect(second["other"] !== first["other"])
        #expect(second["other"]?.urls.map(\.description) == ["http://127.0.0.1:11"])
    }

    @Test func aRemovedBackendIsForgottenAndComesBackFresh() throws {
        let availabilities = BackendAvailabilities(logger: Logger(label: "test"), metrics: ProcessMetrics())
        let first = try Self.update(
            availabilities,
            [
                "api": ["urls": ["http://127.0.0.1:9"]], "old": ["urls": ["http://127.0.0.1:10"]],
            ])
        _ = try Self.update(availabilities, ["api": ["urls": ["http://127.0.0.1:9"]]])
        #expect(availabilities.all.keys.sorted() == ["api"])

        let back = try Self.update(
            availabilities,
            [
                "api": ["urls": ["http://127.0.0.1:9"]], "old": ["urls": ["http://127.0.0.1:10"]],
            ])
        #expect(back["old"] != nil && back["old"] !== first["old"])
    }

    @Test func everyURLIsReportedUpUntilItIsKnownDown() throws {
        let availabilities = BackendAvailabilities(logger: Logger(label: "test"), metrics: ProcessMetrics())
        _ = try Self.update(availabilities, ["api": ["urls": ["http://127.0.0.1:9", "http://127.0.0.1:10"]]])
        let gauges = availabilities.upGauges(now: .now())
        #expect(gauges.count == 2)
        #expect(gauges.values.allSatisfy { $0 == 1 })
    }
}
