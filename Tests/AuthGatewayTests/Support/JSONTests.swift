import Testing

@testable import AuthGateway

@Suite("JSONValue")
struct JSONTests {
    private func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try JSONValue(parsing: text)
    }

    private func parseBytes(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        try JSONValue(parsingBytes: bytes)
    }

    // MARK: Grammar

    @Test(
        "accepts RFC 8259 documents",
        arguments: [
            "0", "-0", "1", "-1", "10", "0.5", "-0.5", "1e3", "1E+3", "1e-3", "123.456e78", "true", "false", "null",
            "\"\"", "\"a\"", "[]", "{}", " \t\r\n[ 1 , 2 ] \n", "{\"a\":{\"b\":[null,true,{}]}}",
            "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"",
        ]
    )
    func acceptsValidDocuments(_ text: String) throws {
        _ = try parse(text)
    }

    @Test(
        "rejects documents outside the RFC 8259 grammar",
        arguments: [
            "",  // nothing
            "   ",  // whitespace only
            "01",  // leading zero
            "-01",  // leading zero after minus
            "00",
            "1.",  // fraction without digits
            ".5",  // no integer part
            "+1",  // plus sign
            "-",  // bare minus
            "1e",  // exponent without digits
            "1e+",
            "0x10",  // hex
            "NaN", "Infinity", "-Infinity",
            "1e999",  // not representable as a finite number
            "[1,]",  // trailing comma in array
            "{\"a\":1,}",  // trailing comma in object
            "[,1]",
            "[1 2]",
            "{\"a\" 1}",
            "{a:1}",  // unquoted key
            "{'a':1}",  // single quotes
            "{1:1}",
            "[",  // unterminated
            "{\"a\":1",
            "\"abc",  // unterminated string
            "\"a\tb\"",  // raw tab (control character)
            "\"a\nb\"",  // raw newline
            "\"\u{01}\"",  // raw U+0001
            "\"\\x41\"",  // invalid escape
            "\"\\a\"",
            "\"\\'\"",
            "\"\\u12\"",  // short \u escape
            "\"\\u12G4\"",  // non-hex digit
            "\"\\uD800\"",  // lone high surrogate
            "\"\\uD800x\"",  // high surrogate followed by a character
            "\"\\uD800\\n\"",  // high surrogate followed by another escape
            "\"\\uD800\\u0041\"",  // high surrogate followed by a non-low-surrogate
            "\"\\uDC00\"",  // lone low surrogate
            "\"\\uDC00\\uD800\"",  // reversed pair
            "tru", "nul", "True", "nulll",
            "{} {}",  // two values
            "[1] x",  // trailing garbage
            "1 2",
            "\"a\" \"b\"",
        ]
    )
    func rejectsInvalidDocuments(_ text: String) {
        #expect(throws: JSONParseError.self) { _ = try parse(text) }
    }

    @Test("a control character is refused also after an escape (slow path)")
    func controlCharacterAfterEscape() {
        #expect(throws: JSONParseError.self) { _ = try parse("\"\\n\u{1F}\"") }
        #expect(throws: JSONParseError.self) { _ = try parse("\"\\n\t\"") }
    }

    @Test(
        "rejects invalid UTF-8 in strings, with and without escapes",
        arguments: [
            [0x22, 0xFF, 0x22],  // 0xFF never occurs in UTF-8
            [0x22, 0xC3, 0x22],  // truncated 2-byte sequence
            [0x22, 0xC0, 0xAF, 0x22],  // overlong "/"
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-8 encoded surrogate U+D800
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
            [0x22, 0x80, 0x22],  // lone continuation byte
            [0x22, 0x5C, 0x6E, 0xFF, 0x22],  // "\n" escape then 0xFF (slow path)
            [0x7B, 0x22, 0xFE, 0x22, 0x3A, 0x31, 0x7D],  // invalid UTF-8 in a key
        ] as [[UInt8]]
    )
    func rejectsInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: JSONParseError.self) { _ = try parseBytes(bytes) }
    }

    @Test("valid multi-byte UTF-8 passes through unchanged")
    func multiByteUTF8() throws {
        let value = try parseBytes(Array("\"h\u{E9}llo \u{1F600} \u{4E2D}\"".utf8))
        #expect(value == .string("h\u{E9}llo \u{1F600} \u{4E2D}"))
    }

    @Test("escapes decode to the characters they name")
    func escapesDecode() throws {
        let value = try parse(#""a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\uD83D\uDE00""#)
        #expect(value == .string("a\"b\\c/d\u{08}\u{0C}\n\r\tA\u{E9}\u{1F600}"))
    }

    @Test("an error carries the byte offset where parsing stopped")
    func errorOffset() {
        do throws(JSONParseError) {
            _ = try parse("[1,2,x]")
            Issue.record("expected an error")
        } catch {
            #expect(error.offset == 5)
        }
    }

    // MARK: Duplicate keys

    @Test("a duplicate key is an error")
    func duplicateKey() {
        #expect(throws: JSONParseError.self) { _ = try parse(#"{"alg":"none","alg":"RS256"}"#) }
    }

    @Test("a duplicate key written with a \\u escape is an error")
    func duplicateKeyEscaped() {
        #expect(throws: JSONParseError.self) { _ = try parse(#"{"\u0061lg":"none","alg":"RS256"}"#) }
        #expect(throws: JSONParseError.self) { _ = try parse(#"{"alg":"none","\u0061\u006C\u0067":"RS256"}"#) }
    }

    @Test("a duplicate in a nested object is an error")
    func duplicateNested() {
        #expect(throws: JSONParseError.self) { _ = try parse(#"{"a":[{"x":1,"y":2,"x":3}]}"#) }
    }

    @Test("same key in sibling objects is fine")
    func sameKeyInSiblings() throws {
        _ = try parse(#"[{"a":1},{"a":2},{"b":{"a":3}}]"#)
    }

    @Test("an object with more than 16 keys and a late duplicate is refused", arguments: [0, 3, 15, 16, 17, 19])
    func largeObjectLateDuplicate(duplicateOf index: Int) throws {
        let keys = (0..<20).map { "key\($0)" }
        // Sanity: the same object without the duplicate parses and keeps all keys in order.
        let unique = "{" + keys.map { "\"\($0)\":1" }.joined(separator: ",") + "}"
        let parsed = try #require(try parse(unique).objectValue)
        #expect(parsed.keys == keys)
        for duplicatePosition in [17, 18, 20] where duplicatePosition > index {
            var entries = keys.map { "\"\($0)\":1" }
            entries.insert("\"\(keys[index])\":2", at: duplicatePosition)
            let text = "{" + entries.joined(separator: ",") + "}"
            #expect(throws: JSONParseError.self, "duplicate of key \(index) at position \(duplicatePosition)") {
                _ = try parse(text)
            }
        }
    }

    @Test("a large object without duplicates parses", arguments: [16, 17, 18, 100])
    func largeObjectNoDuplicates(count: Int) throws {
        let text = "{" + (0..<count).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
        let object = try #require(try parse(text).objectValue)
        #expect(object.keys.count == count)
        #expect(object["k\(count - 1)"]?.numberValue?.exactInt == count - 1)
    }

    // MARK: Depth

    private func nestedArrays(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    private func nestedObjects(_ depth: Int) -> String {
        String(repeating: "{\"a\":", count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)
    }

    @Test("nesting up to the limit is accepted")
    func depthWithinLimit() throws {
        _ = try parse(nestedArrays(63))
        _ = try parse(nestedArrays(JSONValue.maximumDepth))
        _ = try parse(nestedObjects(63))
    }

    @Test("65 nested arrays are refused")
    func depthOverLimit() {
        #expect(throws: JSONParseError.self) { _ = try parse(nestedArrays(65)) }
        #expect(throws: JSONParseError.self) { _ = try parse(nestedObjects(65)) }
        // Deep enough to crash a parser that recursed without bound.
        #expect(throws: JSONParseError.self) { _ = try parse(nestedArrays(100_000)) }
    }

    // MARK: Numbers

    @Test("number text is preserved", arguments: ["42", "1e3", "-0.5", "1E+3", "12345678901234567890", "0.10"])
    func numberTextPreserved(_ text: String) throws {
        let value = try parse(text)
        let number = try #require(value.numberValue)
        #expect(number.text == text)
        #expect(value.jsonText == text)
        #expect(try parse("[\(text)]").jsonText == "[\(text)]")
    }

    @Test("number values are decoded")
    func numberValues() throws {
        #expect(try parse("1e3").numberValue?.double == 1000)
        #expect(try parse("-0.5").numberValue?.double == -0.5)
        #expect(try parse("2.5E-1").numberValue?.double == 0.25)
        // Equality is numeric, not textual.
        #expect(try parse("1e3") == parse("1000"))
        #expect(try parse("1e3") != parse("1001"))
    }

    @Test("exactInt")
    func exactInt() throws {
        #expect(try parse("42").numberValue?.exactInt == 42)
        #expect(try parse("-7").numberValue?.exactInt == -7)
        #expect(try parse("3.0").numberValue?.exactInt == 3)
        #expect(try parse("3e0").numberValue?.exactInt == 3)
        #expect(try parse("1e3").numberValue?.exactInt == 1000)
        #expect(try parse("1700001000").numberValue?.exactInt == 1_700_001_000)
        #expect(try parse("3.5").numberValue?.exactInt == nil)
        #expect(try parse("-0.5").numberValue?.exactInt == nil)
        #expect(try parse("1e20").numberValue?.exactInt == nil)
        #expect(try parse("1e300").numberValue?.exactInt == nil)
    }

    // MARK: Writing

    @Test(
        "jsonText round trips",
        arguments: [
            #"{"b":1,"a":[true,false,null,"x"],"c":{"d":-0.5,"e":1e3}}"#,
            #"[]"#, #"{}"#, #""""#, #"[[[]]]"#,
            #"{"z":1,"y":2,"x":3}"#,
        ]
    )
    func roundTrip(_ text: String) throws {
        let value = try parse(text)
        #expect(value.jsonText == text)
        #expect(try parse(value.jsonText) == value)
    }

    @Test("object key order is kept")
    func keyOrder() throws {
        let object = try #require(try parse(#"{"z":1,"a":2,"m":3}"#).objectValue)
        #expect(object.keys == ["z", "a", "m"])
    }

    @Test("strings are escaped when written")
    func stringEscaping() throws {
        let original =
            "quote\" backslash\\ nl\n cr\r tab\t bs\u{08} ff\u{0C} nul\u{00} us\u{1F} slash/ e\u{E9} emoji\u{1F600} del\u{7F}"
        let text = JSONValue.string(original).jsonText
        #expect(
            text == #""quote\" backslash\\ nl\n cr\r tab\t bs\b ff\f nul\u0000 us\u001f slash/ e"#
                + "\u{E9} emoji\u{1F600} del\u{7F}\"")
        // No raw control character survives.
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 })
        #expect(try parse(text) == .string(original))
    }

    @Test("keys are escaped when written")
    func keyEscaping() throws {
        let value: JSONValue = .object(JSONObject([("a\"b\n", .null)]))
        #expect(value.jsonText == #"{"a\"b\n":null}"#)
        #expect(try parse(value.jsonText) == value)
    }

    @Test("every control character round trips")
    func controlCharactersRoundTrip() throws {
        var all = ""
        for value in UInt8(0)..<0x20 { all.unicodeScalars.append(Unicode.Scalar(value)) }
        let value = JSONValue.string(all)
        #expect(try parse(value.jsonText) == value)
    }

    // MARK: Accessors

    @Test("accessors and subscripts")
    func accessors() throws {
        let value = try parse(#"{"s":"x","n":1,"b":true,"a":[1],"o":{"k":null},"z":null}"#)
        #expect(value["s"]?.stringValue == "x")
        #expect(value["n"]?.numberValue?.exactInt == 1)
        #expect(value["b"]?.boolValue == true)
        #expect(value["a"]?.arrayValue?.count == 1)
        #expect(value["o"]?["k"] == .null)
        #expect(value["missing"] == nil)
        #expect(value["s"]?.numberValue == nil)
        #expect(value["z"]?.typeName == "null")
        #expect(value["o"]?.typeName == "object")
        #expect(JSONValue.string("x")["s"] == nil)
    }

    @Test("JSONObject setter replaces, appends and removes")
    func objectSetter() {
        var object: JSONObject = ["a": 1, "b": 2]
        object["a"] = 3
        object["c"] = 4
        object["b"] = nil
        #expect(object.keys == ["a", "c"])
        #expect(object["a"] == 3)
        #expect(JSONValue.object(object).jsonText == #"{"a":3,"c":4}"#)
    }

    @Test("object equality ignores key order but not values or extra keys")
    func objectEquality() throws {
        #expect(try parse(#"{"a":1,"b":2}"#) == parse(#"{"b":2,"a":1}"#))
        #expect(try parse(#"{"a":1,"b":2}"#) != parse(#"{"a":1,"b":3}"#))
        #expect(try parse(#"{"a":1}"#) != parse(#"{"a":1,"b":2}"#))
        #expect(try parse(#"{"a":1,"b":2}"#) != parse(#"{"a":1,"c":2}"#))
    }
}
