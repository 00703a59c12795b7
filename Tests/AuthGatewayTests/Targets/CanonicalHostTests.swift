import Testing

@testable import AuthGateway

/// The canonical host (docs/forwarding.md, "Request targets"): what routes, policies and
/// `X-Forwarded-Host` read, whatever way the client spelled it.
@Suite("CanonicalHost")
struct CanonicalHostTests {
    static func make(_ value: String) -> Result<CanonicalHost, TargetRefusal> {
        do throws(TargetRefusal) {
            return .success(try CanonicalHost.make(value[...]))
        } catch {
            return .failure(error)
        }
    }

    @Test(
        "spellings of one host",
        arguments: [
            ("admin.example.com", "admin.example.com", nil),
            ("ADMIN.Example.COM", "admin.example.com", nil),
            ("admin.example.com.", "admin.example.com", nil),
            ("admin.example.com.:80", "admin.example.com", "80"),
            ("Admin.Example.Com.:8443", "admin.example.com", "8443"),
            ("admin.example.com:", "admin.example.com", nil),
            ("127.0.0.1:8080", "127.0.0.1", "8080"),
            ("[::1]:8080", "[::1]", "8080"),
            ("[2001:DB8::1]", "[2001:db8::1]", nil),
            ("localhost", "localhost", nil),
            ("under_score.internal", "under_score.internal", nil),
        ] as [(String, String, String?)])
    func canonical(_ value: String, _ name: String, _ port: String?) throws {
        let host = try Self.make(value).get()
        #expect(host.name == name[...])
        #expect(host.port == port?[...])
    }

    @Test(
        "spellings servers read differently are refused",
        arguments: [
            ("", AmbiguousHost.empty),
            ("user@admin.example.com", .userinfo),
            ("admin.example.com@evil", .userinfo),
            (":80", .emptyLabel),
            (".", .emptyLabel),
            ("admin.example.com..", .emptyLabel),
            ("admin..example.com", .emptyLabel),
            (".admin.example.com", .emptyLabel),
            ("admin.example.com:80:80", .invalidPort),
            ("admin.example.com:8o", .invalidPort),
            ("admin.example.com:65536", .invalidPort),
            ("admin.example.com:123456", .invalidPort),
            ("admin.example.com%2e", .invalidCharacter),
            ("admin.example.com,evil", .invalidCharacter),
            ("admin.example.com/x", .invalidCharacter),
            ("admin.example.com\\x", .invalidCharacter),
            ("admin example.com", .invalidCharacter),
            ("admin.exämple.com", .invalidCharacter),
            ("admin.example.com\u{0}", .invalidCharacter),
            ("[::1", .invalidCharacter),
            ("[]", .invalidCharacter),
            ("[fe80::1%25eth0]", .invalidCharacter),
            ("[::1]x", .invalidCharacter),
        ])
    func refused(_ value: String, _ reason: AmbiguousHost) {
        #expect(Self.make(value) == .failure(.ambiguousHost(reason)))
    }

    @Test("a canonical value is used as it is, without a copy")
    func spelledAsSent() throws {
        for value in ["api.example.com", "api.example.com:443", "[::1]:80"] {
            #expect(try Self.make(value).get().isSpelled(as: value[...]))
        }
        for value in ["Api.example.com", "api.example.com.", "api.example.com:", "api.example.com.:443"] {
            #expect(try !Self.make(value).get().isSpelled(as: value[...]))
        }
        // Another value of the same length, or one differing only in its port or past the name.
        let host = try Self.make("api.example.com:443").get()
        for other in ["api.example.com:444", "api.example.org:443", "api.example.com;443", "api.example.com", "x"] {
            #expect(!host.isSpelled(as: other[...]), "\(other)")
        }
        let portless = try Self.make("api.example.com").get()
        for other in ["api.example.com:443", "api.example.co", "api.example.comm", "api.exampleXcom"] {
            #expect(!portless.isSpelled(as: other[...]), "\(other)")
        }
        #expect(portless.isSpelled(as: "xapi.example.com".dropFirst()), "a slice of a longer string")
    }

    /// The one-pass scan against the rules applied one at a time, as they read in
    /// docs/forwarding.md (`ReferenceHost`): the same host, refusal and spelling for random values
    /// over the characters that matter (case, dots, colons, digits, `@`, brackets, bytes outside a
    /// host).
    @Test("the one-pass scan decides as the rules one by one", arguments: [UInt64(1), 2, 3])
    func matchesTheRulesOneByOne(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let alphabet = Array("aZ.:09@[]_-~%/ é")
        for _ in 0..<20_000 {
            let value = String((0..<random.int(0...10)).map { _ in random.pick(alphabet) })
            let expected: Result<CanonicalHost, TargetRefusal>
            do throws(TargetRefusal) {
                expected = .success(try ReferenceHost.make(value[...]))
            } catch {
                expected = .failure(error)
            }
            #expect(Self.make(value) == expected, "\(value)")
            if case .success(let host) = expected {
                let scanned = try? CanonicalHost.canonicalizing(value[...])
                #expect(scanned?.isSpelled == host.isSpelled(as: value[...]), "\(value)")
            }
        }
    }
}

/// The host rules one at a time, in the order they decide (the implementation before the
/// one-pass scan): the model `matchesTheRulesOneByOne` compares the scan with.
private enum ReferenceHost {
    static func make(_ value: Substring) throws(TargetRefusal) -> CanonicalHost {
        let bytes = value.utf8
        guard !bytes.isEmpty else { throw .ambiguousHost(.empty) }
        if bytes.contains(UInt8(ascii: "@")) { throw .ambiguousHost(.userinfo) }
        var name: Substring
        var port: Substring?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { throw .ambiguousHost(.invalidCharacter) }
            name = value[...close]
            port = try Self.port(after: value[bytes.index(after: close)...])
            let inside = name.utf8.dropFirst().dropLast()
            guard !inside.isEmpty, inside.allSatisfy({ Array("0123456789abcdefABCDEF:.".utf8).contains($0) }) else {
                throw .ambiguousHost(.invalidCharacter)
            }
        } else {
            if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
                name = value[..<colon]
                port = try Self.port(after: value[colon...])
            } else {
                name = value
            }
            let regName = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~".utf8)
            guard name.utf8.allSatisfy({ regName.contains($0) }) else { throw .ambiguousHost(.invalidCharacter) }
            guard !name.contains("..") else { throw .ambiguousHost(.emptyLabel) }
            if name.hasSuffix(".") { name = name.dropLast() }
            guard !name.isEmpty, !name.hasPrefix(".") else { throw .ambiguousHost(.emptyLabel) }
        }
        return CanonicalHost(name: Substring(name.lowercased()), port: port)
    }

    private static func port(after rest: Substring) throws(TargetRefusal) -> Substring? {
        guard !rest.isEmpty else { return nil }
        guard rest.first == ":" else { throw .ambiguousHost(.invalidCharacter) }
        let digits = rest.dropFirst()
        guard !digits.isEmpty else { return nil }
        guard digits.count <= 5, digits.allSatisfy(\.isWholeNumber), digits.allSatisfy(\.isASCII),
            let number = Int(digits),
            number <= 65535
        else {
            throw .ambiguousHost(.invalidPort)
        }
        return digits
    }
}
