import Testing

@testable import AuthGateway

@Suite("ConfigReader")
struct ConfigReaderTests {
    private func reader(
        _ json: String, path: String = "section", environment: [String: String] = [:]
    ) -> (ConfigReader, IssueCollector) {
        let issues = IssueCollector()
        let object = try! JSONValue(parsing: json).objectValue!
        return (ConfigReader(object: object, path: path, issues: issues, environment: environment), issues)
    }

    @Test("finish reports exactly the keys no accessor asked for")
    func finishReportsUnknownKeys() {
        let (reader, issues) = reader(#"{"a": 1, "b": "x", "c": true}"#)
        _ = reader.int("a", in: 0...10)
        _ = reader.string("missing")
        reader.finish()
        #expect(
            issues.issues == [
                .init(path: "section.b", message: "unknown key"), .init(path: "section.c", message: "unknown key"),
            ])
    }

    @Test("past 64 keys an object still has each unread key reported, and only those")
    func manyKeys() {
        let json = "{" + (0..<100).map { "\"k\($0)\": \($0)" }.joined(separator: ", ") + "}"
        let (reader, issues) = reader(json)
        for number in 0..<100 where ![5, 63, 64, 99].contains(number) { _ = reader.int("k\(number)", in: 0...100) }
        reader.finish()
        #expect(issues.issues.map(\.path) == ["section.k5", "section.k63", "section.k64", "section.k99"])
    }

    @Test("${ is found anywhere in a string, and only as those two bytes together")
    func substitutionIsFoundAnywhere() {
        let (reader, issues) = reader(
            #"{"end": "a${X}", "start": "${X}b", "alone": "$", "apart": "$ {X}", "brace": "{$"}"#,
            environment: ["X": "x"])
        #expect(reader.string("end") == "ax")
        #expect(reader.string("start") == "xb")
        #expect(reader.string("alone") == "$")
        #expect(reader.string("apart") == "$ {X}")
        #expect(reader.string("brace") == "{$")
        reader.finish()
        #expect(issues.issues.isEmpty)
    }

    @Test("an accessor of the wrong type still marks the key as known")
    func wrongTypeIsNotAlsoUnknown() {
        let (reader, issues) = reader(#"{"a": "1"}"#)
        #expect(reader.int("a", in: 0...10) == nil)
        reader.finish()
        #expect(issues.issues.map(\.path) == ["section.a"])
    }

    @Test("paths at the root have no leading dot")
    func rootPaths() {
        let (reader, issues) = reader(#"{"x": 1}"#, path: "")
        reader.finish()
        #expect(issues.issues.map(\.path) == ["x"])
        #expect(reader.childPath("y") == "y")
    }

    @Test("int range messages")
    func intRanges() {
        let (reader, issues) = reader(#"{"a": 5, "b": 0, "c": 2.5, "d": 3}"#)
        #expect(reader.int("a", in: 0...4) == nil)
        #expect(reader.int("b", in: 1...Int.max) == nil)
        #expect(reader.int("c", in: 0...10) == nil)
        #expect(reader.int("d", in: 3...3) == 3)
        #expect(
            issues.issues.map(\.message) == [
                "must be between 0 and 4, found 5", "must be at least 1, found 0", "expected a whole number, found 2.5",
            ])
    }

    @Test("requiredString and nonEmptyString")
    func strings() {
        let (reader, issues) = reader(#"{"empty": ""}"#)
        #expect(reader.requiredString("name") == nil)
        #expect(reader.requiredString("empty") == nil)
        reader.finish()
        #expect(issues.issues.map(\.description) == ["section.name: is required", "section.empty: must not be empty"])
    }

    @Test(
        "${NAME} substitution",
        arguments: [
            ("plain", "plain"),
            ("${A}", "alpha"),
            ("x-${A}-${B_2}-y", "x-alpha-beta-y"),
            ("$A {A} $", "$A {A} $"),
            ("${A}${A}", "alphaalpha"),
            ("${EMPTY}!", "!"),
        ])
    func substitution(raw: String, expected: String) {
        let (reader, issues) = reader("{}", environment: ["A": "alpha", "B_2": "beta", "EMPTY": ""])
        #expect(reader.substitute(raw, path: "p") == expected)
        #expect(issues.issues.isEmpty)
    }

    @Test("substituted values are not substituted again")
    func noRecursiveSubstitution() {
        let (reader, _) = reader("{}", environment: ["A": "${B}", "B": "secret"])
        #expect(reader.substitute("${A}", path: "p") == "${B}")
    }

    @Test(
        "bad substitutions are errors at the given path",
        arguments: [
            ("${A", "unterminated"),
            ("${}", "invalid environment variable name \"\""),
            ("${A-B}", "invalid environment variable name \"A-B\""),
            ("${NOPE}", "environment variable NOPE is not set"),
        ])
    func badSubstitution(raw: String, message: String) {
        let (reader, issues) = reader("{}", environment: ["A": "alpha"])
        #expect(reader.substitute(raw, path: "p.q") == nil)
        #expect(issues.issues.count == 1)
        #expect(issues.issues.first?.path == "p.q")
        #expect(issues.issues.first?.message.contains(message) == true)
    }

    @Test("substituteAll walks arrays and objects with their paths")
    func substituteAll() {
        let (reader, issues) = reader("{}", environment: ["A": "alpha"])
        let template: JSONValue = ["x": "${A}", "list": ["${A}", 1, true, .null], "deep": ["y": "${MISSING}"]]
        #expect(reader.substituteAll(in: template, path: "t") == nil)
        #expect(issues.issues.map(\.path) == ["t.deep.y"])
        let ok: JSONValue = ["x": "${A}", "list": ["${A}", 1]]
        #expect(reader.substituteAll(in: ok, path: "t") == ["x": "alpha", "list": ["alpha", 1]])
    }

    @Test("stringArray reports each bad element with its index")
    func stringArray() {
        let (reader, issues) = reader(#"{"list": ["a", 1, "${NOPE}", "b"]}"#)
        #expect(reader.stringArray("list") == nil)
        #expect(issues.issues.map(\.path) == ["section.list[1]", "section.list[2]"])
    }

    @Test("objectArray gives each element its indexed path")
    func objectArray() {
        let (reader, issues) = reader(#"{"list": [{"a": 1}, 2, {"b": 3}]}"#)
        let readers = reader.objectArray("list") ?? []
        #expect(readers.map(\.path) == ["section.list[0]", "section.list[2]"])
        #expect(issues.issues.map(\.description) == ["section.list[1]: expected an object, found number"])
        readers.forEach { $0.finish() }
        #expect(issues.issues.map(\.path) == ["section.list[1]", "section.list[0].a", "section.list[2].b"])
    }
}
