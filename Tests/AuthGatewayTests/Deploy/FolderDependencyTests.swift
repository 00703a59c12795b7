import Foundation
import Testing

import AuthGatewayTesting

/// The source tree's layering holds: no two folders of `Sources/AuthGateway` use each other
/// (`scripts/folder-deps.py`, which names the declarations behind each use). A new use that
/// closes a cycle fails here, with the names, instead of growing unnoticed.
@Suite("Folder dependencies", .timeLimit(.minutes(1)))
struct FolderDependencyTests {
    @Test func noTwoSourceFoldersUseEachOther() async throws {
        let python = try ExternalTool.require("python3", package: "python3")
        let script = ProcessTests.packageRoot.appendingPathComponent("scripts/folder-deps.py").path
        let result = try await ExternalTool.run(python, [script], timeout: .seconds(50))
        #expect(result.status == 0, "folder cycles:\n\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("no pair of folders uses each other"), "\(result.stdout)")
    }

    @Test func theCheckerFindsACycleWhenThereIsOne() async throws {
        // The checker itself, on a two-folder tree that has one: it must not pass everything.
        let python = try ExternalTool.require("python3", package: "python3")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("folder-deps-\(UUID().uuidString)")
        let sources = root.appendingPathComponent("Sources/AuthGateway")
        try FileManager.default.createDirectory(
            at: sources.appendingPathComponent("A"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: sources.appendingPathComponent("B"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try "struct Apple { let b: Banana }\n".write(
            to: sources.appendingPathComponent("A/Apple.swift"), atomically: true, encoding: .utf8)
        try "struct Banana { let a: [Apple] }\n".write(
            to: sources.appendingPathComponent("B/Banana.swift"), atomically: true, encoding: .utf8)
        let script = ProcessTests.packageRoot.appendingPathComponent("scripts/folder-deps.py").path
        let result = try await ExternalTool.run(python, [script, "--root", sources.path], timeout: .seconds(50))
        #expect(result.status == 1)
        #expect(result.stdout.contains("A <-> B"), "\(result.stdout)")
    }
}
