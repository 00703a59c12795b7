import Foundation

/// Locates the committed test fixtures (`Tests/AuthGatewayTests/Fixtures`, excluded from the
/// target) and the repository root, from this source file's location.
enum Fixtures {
    /// `Tests/AuthGatewayTests/Fixtures`.
    static let directory: URL = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            let candidate = url.appendingPathComponent("Fixtures")
            if url.lastPathComponent == "AuthGatewayTests",
                FileManager.default.fileExists(atPath: candidate.path)
            {
                return candidate
            }
            url.deleteLastPathComponent()
        }
        fatalError("Tests/AuthGatewayTests/Fixtures not found above \(#filePath)")
    }()

    /// The repository root (the folder holding `Package.swift`).
    static let repositoryRoot: URL =
        directory
        .deletingLastPathComponent()  // AuthGatewayTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// A file under `Fixtures/`.
    static func url(_ relative: String) -> URL {
        directory.appendingPathComponent(relative)
    }

    /// The UTF-8 text of a file under `Fixtures/`.
    static func text(_ relative: String) -> String {
        let url = self.url(relative)
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            fatalError("cannot read fixture \(url.path)")
        }
        return text
    }

    /// A file of the repository, e.g. `config/gateway.json`.
    static func repositoryURL(_ relative: String) -> URL {
        repositoryRoot.appendingPathComponent(relative)
    }
}
