import Foundation
import NIOCore
import NIOPosix

import AuthGatewayTesting
@testable import AuthGateway

/// What the `Application/` suites build from: a configuration on 127.0.0.1:0 whose backend is
/// never dialled, adjusted by the test.
enum ApplicationTesting {
    static func document(_ configure: (inout JSONObject) -> Void = { _ in }) -> JSONObject {
        var document = GatewayFixture.baseConfiguration(backendURL: "http://127.0.0.1:9")
        configure(&document)
        return document
    }

    static func configuration(_ configure: (inout JSONObject) -> Void = { _ in }) throws -> GatewayConfiguration {
        try ConfigurationLoader(environment: [:]).load(
            text: JSONValue.object(Self.document(configure)).jsonText, baseDirectory: "/")
    }

    /// A file holding `text`, in a folder of its own (removed by the caller with `remove`).
    static func file(_ text: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "application-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("gateway.json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// Each event loop's snapshot generation, read on its loop.
    static func generations(_ application: GatewayApplication) async throws -> [UInt64] {
        var generations: [UInt64] = []
        for worker in application.workers {
            generations.append(try await worker.eventLoop.submit { worker.value.snapshot.generation }.get())
        }
        return generations
    }

    static func reloads(_ application: GatewayApplication, _ result: ReloadResult) -> Int {
        Int(application.shared.processMetrics.snapshot.counters[MetricKey.configReload(result)] ?? 0)
    }
}
