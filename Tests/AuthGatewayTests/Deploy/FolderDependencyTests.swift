import Foundation
import Testing

import AuthGatewayTesting

/// The source tree's layering holds: no set of folders of `Sources/AuthGateway` reach each
/// other through their uses, however long the cycle (`scripts/folder-deps.py`, which names the
/// declarations behind each use). A new use that closes a cycle fails here, with the names,
/// instead of growing unnoticed.
@Suite("Folder dependencies", .timeLimit(.minutes(1)))
struct FolderDependencyTests {
    @Test func noCycleAmongSourceFolders() async throws {
        let python = try ExternalTool.require("python3", package: "python3")
        let script = ProcessTests.packageRoot.appendingPathComponent("scripts/folder-deps.py").path
        let result = try await ExternalTool.run(python, [script], timeout: .seconds(50))
        #expect(result.status == 0, "folder cycles:\n\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("no cycle among folders"), "\(result.stdout)")
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
        #expect(result.stdout.contains("A -> B -> A"), "\(result.stdout)")
    }

    /// A cycle through three folders, where no two use each other directly: the pairwise check
    /// this replaced passed it (the Auth -> Upstream -> Forwarding -> Auth cycle hid that way).
    @Test func theCheckerFindsALongerCycle() async throws {
        let python = try ExternalTool.require("python3", package: "python3")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("folder-deps-\(UUID().uuidString)")
        let sources = root.appendingPathComponent("Sources/AuthGateway")
        defer { try? FileManager.default.removeItem(at: root) }
        let files = [
            ("A", "Apple", "struct Apple { let b: Banana }\n"),
            ("B", "Banana", "struct Banana { let c: Cherry }\n"),
            ("C", "Cherry", "struct Cherry { let a: [Apple] }\n"),
            ("D", "Date", "struct Date { let a: Apple }\n"),
        ]
        for (folder, name, text) in files {
            let directory = sources.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try text.write(to: directory.appendingPathComponent("\(name).swift"), atomically: true, encoding: .utf8)
        }
        let script = ProcessTests.packageRoot.appendingPathComponent("scripts/folder-deps.py").path
        let result = try await ExternalTool.run(python, [script, "--root", sources.path], timeout: .seconds(50))
        #expect(result.status == 1)
        #expect(result.stdout.contains("A -> B -> C -> A   (folders in the cycle: A, B, C)"), "\(result.stdout)")
        #expect(result.stdout.contains("  C -> A: Apple"), "\(result.stdout)")
        // D uses the cycle but is not in it.
        #expect(!result.stdout.contains("D ->"), "\(result.stdout)")
    }
}
