import Foundation
import Logging
import Testing

@testable import AuthGateway

/// `ConfigurationReloader` (docs/operations.md): a reload validates before anything changes, swaps
/// every loop's snapshot, and is counted either way.
@Suite("ConfigurationReloader", .awaitsCleanups)
struct ConfigurationReloaderTests {
    @Test func anInvalidFileKeepsTheRunningConfigurationAndCountsAFailure() async throws {
        let application = try await GatewayApplication.make(configuration: try ApplicationTesting.configuration())
        atTestEnd { await application.shutdown() }
        var document = ApplicationTesting.document()
        document["routes"] = [["name": "other", "pathPrefix": "/other", "backend": "api"]]
        document["unknownSection"] = true
        let path = try ApplicationTesting.file(JSONValue.object(document).jsonText)
        atTestEnd { ApplicationTesting.remove(path) }

        application.reloader.reload(path: path, loader: ConfigurationLoader(environment: [:]))

        #expect(application.reloader.generation == 1)
        #expect(application.configuration.routes.map(\.name) == ["default"])
        #expect(try await ApplicationTesting.generations(application) == [1])
        #expect(ApplicationTesting.reloads(application, .failure) == 1)
        #expect(ApplicationTesting.reloads(application, .success) == 0)
    }

    @Test func aMissingFileIsAFailedReloadToo() async throws {
        let application = try await GatewayApplication.make(configuration: try ApplicationTesting.configuration())
        atTestEnd { await application.shutdown() }

        application.reloader.reload(
            path: "/nonexistent/\(UUID().uuidString)/gateway.json", loader: ConfigurationLoader(environment: [:]))

        #expect(application.reloader.generation == 1)
        #expect(ApplicationTesting.reloads(application, .failure) == 1)
    }

    @Test func aValidFileSwapsEveryLoopsSnapshotAndCountsASuccess() async throws {
        let configuration = try ApplicationTesting.configuration { $0["eventLoopThreads"] = 2 }
        let application = try await GatewayApplication.make(configuration: configuration)
        atTestEnd { await application.shutdown() }
        var document = ApplicationTesting.document()
        document["eventLoopThreads"] = 2
        document["routes"] = [["name": "other", "pathPrefix": "/other", "backend": "api"]]
        let path = try ApplicationTesting.file(JSONValue.object(document).jsonText)
        atTestEnd { ApplicationTesting.remove(path) }

        application.reloader.reload(path: path, loader: ConfigurationLoader(environment: [:]))

        #expect(application.reloader.generation == 2)
        #expect(application.configuration.routes.map(\.name) == ["other"])
        // Each loop adopts it on the loop, in order: a task submitted after it sees it.
        #expect(try await ApplicationTesting.generations(application) == [2, 2])
        #expect(ApplicationTesting.reloads(application, .success) == 1)
        #expect(ApplicationTesting.reloads(application, .failure) == 0)
    }

    /// What the reload keeps while its section is unchanged (docs/operations.md): the profile cache.
    @Test func aReloadKeepsTheProfileCacheUntilItsSectionChanges() async throws {
        func withProfile(ttl: Int) -> (inout JSONObject) -> Void {
            {
                $0["authService"] = [
                    "url": "http://127.0.0.1:9",
                    "profile": ["path": "/v1/user", "ttlSeconds": .number(JSONNumber(ttl))],
                ]
            }
        }
        let application = try await GatewayApplication.make(
            configuration: try ApplicationTesting.configuration(withProfile(ttl: 60)))
        atTestEnd { await application.shutdown() }
        let first = try await Self.profileCache(application)

        application.reload(
            try ApplicationTesting.configuration { document in
                withProfile(ttl: 60)(&document)
                document["stripInboundHeaderPrefixes"] = ["X-User-", "X-Other-"]
            })
        let kept = try await Self.profileCache(application)
        application.reload(try ApplicationTesting.configuration(withProfile(ttl: 120)))
        let replaced = try await Self.profileCache(application)

        #expect(first != nil)
        #expect(kept === first)
        #expect(replaced != nil && replaced !== first)
        #expect(application.reloader.generation == 3)
    }

    private static func profileCache(_ application: GatewayApplication) async throws -> ProfileCache? {
        let worker = application.workers[0]
        return try await worker.eventLoop.submit { worker.value.snapshot.authentication.profiles }.get()
    }

    /// `tls.insecureSkipVerify` is loud: one warning per such backend when the application
    /// starts and at every reload that keeps it, none for a verified backend — read from the
    /// application's own logger.
    @Test func insecureBackendsAreWarnedAboutAtStartAndAtEveryReload() async throws {
        func document(lax: Bool) -> JSONObject {
            ApplicationTesting.document { document in
                var backends: JSONObject = ["safe": ["urls": ["https://a.internal"]]]
                if lax { backends["lax"] = ["urls": ["https://b.internal"], "tls": ["insecureSkipVerify": true]] }
                document["backends"] = .object(backends)
                document["routes"] = [["name": "r", "pathPrefix": "/", "backend": "safe", "auth": "none"]]
            }
        }
        let capture = LogCapture()
        let configuration = try ConfigurationLoader(environment: [:]).load(
            text: JSONValue.object(document(lax: true)).jsonText, baseDirectory: "/")
        let application = try await GatewayApplication.make(
            configuration: configuration, logger: Logger(label: "test") { _ in capture })
        atTestEnd { await application.shutdown() }
        func warnings() -> [Substring] {
            capture.text.split(separator: "\n").filter { $0.contains("backend.tls_verification_off") }
        }
        #expect(warnings().isEmpty, "warned before the start")

        try await application.start()
        #expect(warnings().count == 1)
        #expect(warnings().allSatisfy { $0.hasPrefix("warning ") && $0.contains("lax") && !$0.contains("safe") })

        for (index, lax) in [true, false].enumerated() {
            let path = try ApplicationTesting.file(JSONValue.object(document(lax: lax)).jsonText)
            atTestEnd { ApplicationTesting.remove(path) }
            application.reloader.reload(path: path, loader: ConfigurationLoader(environment: [:]))
            #expect(application.reloader.generation == UInt64(index + 2))
        }
        // The reload that kept it warned again; the one that dropped it did not.
        #expect(warnings().count == 2, "\(capture.text)")
    }
}
