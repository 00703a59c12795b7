import Foundation
import Testing

@testable import AuthGateway

/// `tokens.apiKeys` (docs/policies.md, "API keys"): inline keys, a keys file, and every mistake
/// reported with its JSON path.
@Suite("ConfigurationLoader: API keys")
struct ConfigurationLoaderAPIKeysTests {
    static let digest = String(repeating: "ab", count: 32)

    func load(_ apiKeys: String, baseDirectory: String = "/") -> Result<GatewayConfiguration, ConfigurationError> {
        let text = """
            {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:9100"]}},
             "routes": [{"name": "all", "pathPrefix": "/", "backend": "api"}],
             "tokens": {"apiKeys": \(apiKeys)}}
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: baseDirectory))
        } catch {
            return .failure(error)
        }
    }

    func issues(_ apiKeys: String, baseDirectory: String = "/") -> [String] {
        guard case .failure(let error) = self.load(apiKeys, baseDirectory: baseDirectory) else { return [] }
        return error.issues.map { "\($0.path): \($0.message)" }
    }

    @Test("inline keys are read; the default header is X-API-Key; API keys alone let routes authenticate")
    func inlineKeys() throws {
        let configuration = try self.load(
            #"{"keys": [{"id": "ci", "sha256": "\#(Self.digest)", "claims": {"sub": "ci", "scope": "deploy"}, "expires": "2027-01-01T00:00:00Z"}]}"#
        ).get()
        let apiKeys = try #require(configuration.tokens.apiKeys)
        #expect(apiKeys.header == "X-API-Key")
        #expect(apiKeys.keys.count == 1)
        #expect(apiKeys.keys[0].id == "ci")
        #expect(apiKeys.keys[0].sha256 == [UInt8](repeating: 0xAB, count: 32))
        #expect(apiKeys.keys[0].claims["scope"] == "deploy")
        #expect(apiKeys.keys[0].expiresAt == 1_798_761_600)
        #expect(configuration.tokens.issuers.isEmpty)
    }

    @Test("a keys file is read (relative to the configuration), after the inline keys")
    func keysFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apikeys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = #"[{"id": "file-key", "sha256": "\#(String(repeating: "cd", count: 32))", "claims": {"sub": "f"}}]"#
        try file.write(to: directory.appendingPathComponent("keys.json"), atomically: true, encoding: .utf8)
        let configuration = try self.load(
            #"{"header": "X-Machine-Key", "keysFile": "keys.json", "keys": [{"id": "ci", "sha256": "\#(Self.digest)", "claims": {"sub": "ci"}}]}"#,
            baseDirectory: directory.path
        ).get()
        let apiKeys = try #require(configuration.tokens.apiKeys)
        #expect(apiKeys.header == "X-Machine-Key")
        #expect(apiKeys.keys.map(\.id) == ["ci", "file-key"])
        #expect(apiKeys.keysFile == directory.appendingPathComponent("keys.json").path)

        try "{\"id\": 1}".write(to: directory.appendingPathComponent("bad.json"), atomically: true, encoding: .utf8)
        #expect(
            self.issues(#"{"keysFile": "bad.json"}"#, baseDirectory: directory.path).first?.hasPrefix(
                "tokens.apiKeys.keysFile: ") == true)
        try #"[{"id": "x", "sha256": "zz", "claims": {"sub": "x"}}]"#.write(
            to: directory.appendingPathComponent("worse.json"), atomically: true, encoding: .utf8)
        #expect(
            self.issues(#"{"keysFile": "worse.json"}"#, baseDirectory: directory.path) == [
                "tokens.apiKeys.keysFile[0].sha256: must be the 64 hex digits of the key's SHA-256"
            ])
    }

    @Test("errors carry their JSON paths")
    func errors() {
        let key = #""sha256": "\#(Self.digest)", "claims": {"sub": "a"}"#
        let cases: [(String, String)] = [
            ("{}", "tokens.apiKeys: apiKeys needs \"keys\", \"keysFile\" or both"),
            (#"{"keys": [], "header": "Authorization"}"#, "tokens.apiKeys.header: "),
            (#"{"keys": [], "header": "bad header"}"#, "tokens.apiKeys.header: "),
            (#"{"keys": [{"id": "a", "sha256": "abc", "claims": {"sub": "a"}}]}"#, "tokens.apiKeys.keys[0].sha256: "),
            (#"{"keys": [{"id": "a", "claims": {"sub": "a"}}]}"#, "tokens.apiKeys.keys[0].sha256: "),
            (#"{"keys": [{"id": "", \#(key)}]}"#, "tokens.apiKeys.keys[0].id: "),
            (#"{"keys": [{"id": "a", "sha256": "\#(Self.digest)"}]}"#, "tokens.apiKeys.keys[0].claims: "),
            (#"{"keys": [{"id": "a", "sha256": "\#(Self.digest)", "claims": []}]}"#, "tokens.apiKeys.keys[0].claims: "),
            (
                #"{"keys": [{"id": "a", "sha256": "\#(Self.digest)", "claims": {"sub": 7}}]}"#,
                "tokens.apiKeys.keys[0].claims.sub: "
            ),
            (#"{"keys": [{"id": "a", \#(key), "expires": "next year"}]}"#, "tokens.apiKeys.keys[0].expires: "),
            (#"{"keys": [{"id": "a", \#(key), "colour": "red"}]}"#, "tokens.apiKeys.keys[0].colour: unknown key"),
            (
                #"{"keys": [{"id": "a", \#(key)}, {"id": "a", "sha256": "\#(String(repeating: "00", count: 32))", "claims": {"sub": "b"}}]}"#,
                "tokens.apiKeys.keys[1].id: duplicate"
            ),
            (#"{"keys": [{"id": "a", \#(key)}, {"id": "b", \#(key)}]}"#, "tokens.apiKeys.keys[1].sha256: the same key"),
            (#"{"keysFile": "/nonexistent/keys.json"}"#, "tokens.apiKeys.keysFile: cannot read"),
        ]
        for (apiKeys, expected) in cases {
            let issues = self.issues(apiKeys)
            #expect(issues.contains { $0.hasPrefix(expected) }, "\(apiKeys) → \(issues)")
        }
    }

    /// Writes `text` as `name` in a fresh folder; the folder, for `baseDirectory`.
    func folder(with files: [String: String]) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apikeys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return directory
    }

    static func entry(_ id: String, key: String) -> String {
        #"{"id": "\#(id)", "sha256": "\#(TokenDigest(of: key[...]).hex)", "claims": {"sub": "\#(id)"}}"#
    }

    @Test("a keys file's mistakes name the file's element: a key listed twice, a non-object, not an array, not JSON")
    func keysFileMistakes() throws {
        let directory = try self.folder(with: [
            "twice.json":
                "[\(Self.entry("a", key: "ka")), \(Self.entry("b", key: "kb")), \(Self.entry("c", key: "ka"))]",
            "inline-twice.json": "[\(Self.entry("b", key: "kb")), \(Self.entry("c", key: "ka"))]",
            "mixed.json": "[\(Self.entry("a", key: "ka")), 7, \(Self.entry("b", key: "kb"))]",
            "object.json": #"{"keys": []}"#,
            "cut.json": "[\(Self.entry("a", key: "ka")), {\"id\": ",
            "tail.json": "[\(Self.entry("a", key: "ka"))] []",
            "empty.json": " [ ] ",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = directory.path
        #expect(
            self.issues(#"{"keysFile": "twice.json"}"#, baseDirectory: base) == [
                "tokens.apiKeys.keysFile[2].sha256: the same key is listed twice"
            ])
        #expect(
            self.issues(
                #"{"keys": [\#(Self.entry("a", key: "ka"))], "keysFile": "inline-twice.json"}"#, baseDirectory: base)
                == ["tokens.apiKeys.keysFile[1].sha256: the same key is listed twice"])
        #expect(
            self.issues(#"{"keysFile": "mixed.json"}"#, baseDirectory: base) == [
                "tokens.apiKeys.keysFile[1]: expected an object, found number"
            ])
        #expect(
            self.issues(#"{"keysFile": "object.json"}"#, baseDirectory: base).first?.hasSuffix(
                "expected an array of keys, found object") == true)
        #expect(
            self.issues(#"{"keysFile": "cut.json"}"#, baseDirectory: base).first?.contains("not a JSON document")
                == true)
        #expect(
            self.issues(#"{"keysFile": "tail.json"}"#, baseDirectory: base).first?.contains("not a JSON document")
                == true)
        let empty = try self.load(#"{"keysFile": "empty.json"}"#, baseDirectory: base).get()
        #expect(empty.tokens.apiKeys?.keys.isEmpty == true)
    }

    @Test("a large keys file loads element by element, and every key in it is found, first and last")
    func largeKeysFile() throws {
        let count = 20_000
        let text = "[" + (0..<count).map { Self.entry("m\($0)", key: "key-\($0)") }.joined(separator: ",\n") + "]"
        let directory = try self.folder(with: ["keys.json": text])
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try self.load(#"{"keysFile": "keys.json"}"#, baseDirectory: directory.path).get()
        let apiKeys = try #require(configuration.tokens.apiKeys)
        #expect(apiKeys.keys.count == count)
        #expect(apiKeys.index != nil, "the loader's index goes to the gateway")
        #expect(apiKeys.keys.capacity <= count + count / 8, "no doubling slack kept for the configuration's life")
        let table = APIKeyTable(apiKeys)
        for number in [0, 1, count / 2, count - 1] {
            #expect(table.key("key-\(number)")?.id == "m\(number)")
        }
        #expect(table.key("key-\(count)") == nil)
    }
}
