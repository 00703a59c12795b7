import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The gateway's request parser against an independent one: llhttp, through NIO's
/// `HTTPRequestDecoder`. Thousands of seeded mutations of valid requests (stray spaces, CR, LF,
/// NUL, colons, commas, doubled header lines…) go to both. Whenever the gateway's parser
/// accepts a request, llhttp must accept it too and see the same method, version, headers and
/// body: on everything that decides where a request ends, the gateway may be stricter than
/// llhttp, never looser or different (the property that keeps two HTTP implementations from
/// disagreeing about where a request ends: request smuggling).
///
/// Known, deliberate differences: llhttp knows a fixed list of methods and refuses the others
/// (the gateway accepts any token): such a request is still compared, everything but its
/// method, by giving llhttp the same bytes with the method replaced by `POST` (no request's
/// framing depends on its method, RFC 9112 §6.3, except CONNECT's, which llhttp knows). Left
/// out of the comparison, only when llhttp refuses the input: it refuses repeated identical
/// `Content-Length` headers (RFC 9110 §8.6 allows accepting them; the gateway does, as
/// HAProxy does), and some request-target characters (`"`, `{`…) that the gateway leaves to
/// `RequestTarget`, which checks the target after the parser. llhttp keeps trailing
/// whitespace in values (RFC 9112 §5 excludes it, so does the gateway): its values are
/// compared trimmed.
@Suite("RequestParser against llhttp")
struct DifferentialParserTests {
    static let seeds = [
        "GET /a?b=c HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nAccept: */*\r\n\r\n",
        "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-B: two words\r\n\r\nhello",
        "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n",
        "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "PUT /x HTTP/1.1\r\nHost: h:8080\r\nCookie: a=1; b=2\r\nContent-Length: 3\r\nAuthorization: Bearer a.b.c\r\n\r\nabc",
        "POST /d HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: h\r\n\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
    ]

    /// Bytes that break HTTP in interesting ways, and a few harmless ones.
    static let nasty: [UInt8] = Array(" \t\r\n\0:,;\u{7f}a0-\"".utf8) + [0x80, 0xFF, 0x0B]

    /// What a parser made of one input: nil when it refused it.
    struct Parsed: Equatable {
        var method: String
        var uri: String
        var version: HTTPVersion
        var headers: [String]
        var body: [UInt8]
    }

    @Test(arguments: 0..<Self.seeds.count)
    func mutationsAgreeWithLLHTTP(seedIndex: Int) async throws {
        let seed = Array(Self.seeds[seedIndex].utf8)
        #expect(
            Self.gateway(seed) != nil && Self.gateway(seed) == Self.llhttp(seed), "the seed itself must parse the same")
        let outcome = await onCPUHeavyQueue { Self.compareMutations(of: seed, seedIndex: seedIndex) }
        for disagreement in outcome.disagreements { Issue.record("disagreement on \(disagreement)") }
        // The mutations must leave enough accepted inputs for the comparison to mean something,
        // some of them with methods llhttp does not know.
        #expect(outcome.accepted > 100)
        #expect(outcome.unknownMethods > 10)
    }

    struct MutationOutcome: Sendable {
        var accepted = 0
        var unknownMethods = 0
        var disagreements: [String] = []
    }

    /// 10 000 seeded mutations of `seed` through both parsers (CPU work for seconds: the test
    /// runs it on `onCPUHeavyQueue`).
    static func compareMutations(of seed: [UInt8], seedIndex: Int) -> MutationOutcome {
        var random = RequestIDGenerator(seed: 0x5EED_0000 + UInt64(seedIndex))
        var outcome = MutationOutcome()
        for _ in 0..<10_000 where outcome.disagreements.count < 20 {
            let input = Self.mutate(seed, using: &random)
            guard let ours = Self.gateway(input) else { continue }
            outcome.accepted += 1
            if !HTTPMethod.knownToLLHTTP(ours.method) { outcome.unknownMethods += 1 }
            let theirs = Self.llhttp(input, readingMethodOf: ours)
            if theirs == nil && Self.isKnownDifference(ours) { continue }
            if theirs != ours { outcome.disagreements.append(String(decoding: input, as: UTF8.self).debugDescription) }
        }
        return outcome
    }

    @Test("a method llhttp does not know: everything else is still compared")
    func unknownMethodsAreComparedOnTheRest() throws {
        let input = Array("\r\nFROB /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n".utf8)
        let ours = try #require(Self.gateway(input))
        #expect(!HTTPMethod.knownToLLHTTP(ours.method))
        #expect(Self.llhttp(input) == nil)
        #expect(Self.llhttp(input, readingMethodOf: ours) == ours)
        // A reading that differs anywhere else is still a disagreement.
        var longer = ours
        longer.body += Array("GET".utf8)
        #expect(Self.llhttp(input, readingMethodOf: longer) != longer)
    }

    static func isKnownDifference(_ parsed: Parsed) -> Bool {
        if (try? RequestTarget(uri: parsed.uri, hostField: nil, settings: PathSettings())) == nil { return true }
        if parsed.uri.utf8.contains(where: { Array("\"<>\\^`{|}".utf8).contains($0) }) { return true }
        let lengths = parsed.headers.filter { $0.lowercased().hasPrefix("content-length:") }
        return lengths.count > 1 && Set(lengths.map { $0.lowercased() }).count == 1
    }

    static func mutate(_ seed: [UInt8], using random: inout RequestIDGenerator) -> [UInt8] {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: bytes.insert(Self.nasty.randomElement(using: &random)!, at: position)
            case 1: bytes.remove(at: position)
            case 2: bytes[position] = Self.nasty.randomElement(using: &random)!
            default:
                // Double the line the position falls in (a second Host, Content-Length…).
                let start = bytes[..<position].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
                if let end = bytes[position...].firstIndex(of: UInt8(ascii: "\n")) {
                    bytes.insert(contentsOf: bytes[start...end], at: end + 1)
                }
            }
            if bytes.isEmpty { bytes = seed }
        }
        return bytes
    }

    /// The gateway's parser: the first request, its body and end, or nil when refused anywhere.
    static func gateway(_ input: [UInt8]) -> Parsed? {
        var parser = RequestParser(maxHeaderBytes: 16 * 1024, maxBodyBytes: 1024 * 1024)
        var buffer = ByteBuffer(bytes: input)
        var parsed: Parsed?
        while let event = parser.next(&buffer) {
            switch event {
            case .head(let head, let framing):
                guard case .success = framing else { return nil }
                parsed = Parsed(
                    method: head.method.rawValue, uri: head.uri, version: head.version,
                    headers: head.headers.map { "\($0.name): \($0.value)" }, body: []
                )
            case .body(let part):
                parsed?.body += part.readableBytesView
            case .end:
                return parsed
            case .error:
                return nil
            }
        }
        return nil  // incomplete: not a request (yet)
    }

    /// llhttp's reading of `input`, which the gateway read as `ours`: when llhttp does not know
    /// the method, its reading of the same bytes with `POST` in the method's place (and the
    /// gateway's method put back), so the rest (target, version, fields, body and where it
    /// ends) is still compared.
    static func llhttp(_ input: [UInt8], readingMethodOf ours: Parsed) -> Parsed? {
        guard !HTTPMethod.knownToLLHTTP(ours.method) else { return Self.llhttp(input) }
        // Where the gateway's request line starts: after the empty lines it skips.
        var start = 0
        while start + 1 < input.count,
            input[start] == UInt8(ascii: "\n")
                || (input[start] == UInt8(ascii: "\r") && input[start + 1] == UInt8(ascii: "\n"))
        {
            start += input[start] == UInt8(ascii: "\n") ? 1 : 2
        }
        let method = Array(ours.method.utf8)
        guard input[start...].starts(with: method) else { return nil }
        var known = input
        known.replaceSubrange(start..<(start + method.count), with: Array("POST".utf8))
        var theirs = Self.llhttp(known)
        theirs?.method = ours.method
        return theirs
    }

    /// llhttp through NIO: the first request, or nil when it refused the input or did not
    /// see a whole request.
    static func llhttp(_ input: [UInt8]) -> Parsed? {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        try? channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
        // An error after the first request (in bytes that follow it) does not undo it: its parts
        // are in the channel already.
        _ = try? channel.writeInbound(ByteBuffer(bytes: input))
        var parsed: Parsed?
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .head(let head):
                guard parsed == nil else { return parsed }
                // Values without trailing whitespace, as RFC 9112 §5 defines them.
                parsed = Parsed(
                    method: head.method.rawValue, uri: head.uri, version: head.version,
                    headers: head.headers.map { "\($0.name): \(ASCII.trimmingOWS($0.value[...]))" }, body: []
                )
            case .body(let part):
                parsed?.body += part.readableBytesView
            case .end:
                return parsed
            }
        }
        return nil
    }
}

extension HTTPMethod {
    /// Methods llhttp parses; others it refuses while the gateway accepts any token.
    static func knownToLLHTTP(_ name: String) -> Bool {
        if case .RAW = HTTPMethod(rawValue: name) { return false }
        return true
    }
}
