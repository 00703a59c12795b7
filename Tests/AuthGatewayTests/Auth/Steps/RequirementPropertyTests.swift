import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Property-style tests of `RequirementCheck`: random requirements and requests from a seeded
/// generator, hundreds of cases each, checked against an independent reference evaluation and
/// against the algebra of the combinators (docs/policies.md).
@Suite("RequirementCheck properties")
struct RequirementPropertyTests {
    static let cases = 600
    static let base = "routes[3].require"

    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    // MARK: Properties

    @Test("every case agrees with the reference evaluation, verdict and failing path; explain agrees with evaluate")
    func reference() throws {
        var random = SeededRandom(seed: 0x5EED_0001)
        var outcomes = [0, 0]
        for _ in 0..<Self.cases {
            let request = RandomRequest(&random)
            let require = RandomRequirement.object(&random, depth: 3)
            let verdict = try self.evaluate(require, request)
            let expected = Reference(request: request).failingPath(require, path: Self.base)
            #expect(verdict == expected.map { .fails(clause: $0) } ?? .holds, "\(require.jsonText) on \(request)")
            let explanation = RequirementCheck.explain(
                try Requirement(parsing: require, path: Self.base), self.fields(request))
            #expect(explanation.verdict == verdict)
            if case .fails(let clause) = verdict {
                #expect(explanation.entries.contains { $0.path == clause && $0.result == .fails })
            }
            outcomes[verdict == .holds ? 0 : 1] += 1
        }
        // The generator is useful only if both answers are common.
        #expect(outcomes.allSatisfy { $0 > Self.cases / 10 }, "holds/fails: \(outcomes)")
    }

    @Test("not(not(r)) == r; a refusal names the outer not")
    func doubleNegation() throws {
        try self.forEachCase(seed: 0x5EED_0002) { random, request, r in
            let verdict = try self.evaluate(r, request)
            let doubled = try self.evaluate(["not": ["not": r]], request)
            #expect((doubled == .holds) == (verdict == .holds), "\(r.jsonText)")
            if verdict != .holds { #expect(doubled == .fails(clause: Self.base + ".not")) }
        }
    }

    @Test("anyOf([r]) == r, and allOf([r]) == r with the same failing clause one level down")
    func singletons() throws {
        try self.forEachCase(seed: 0x5EED_0003) { random, request, r in
            let verdict = try self.evaluate(r, request)
            let any = try self.evaluate(["anyOf": [r]], request)
            #expect((any == .holds) == (verdict == .holds), "\(r.jsonText)")
            if verdict != .holds { #expect(any == .fails(clause: Self.base + ".anyOf")) }
            let all = try self.evaluate(["allOf": [r]], request)
            switch verdict {
            case .holds:
                #expect(all == .holds, "\(r.jsonText)")
            case .fails(let clause):
                let inner = Self.base + ".allOf[0]" + clause.dropFirst(Self.base.count)
                #expect(all == .fails(clause: inner), "\(r.jsonText)")
            }
        }
    }

    @Test("De Morgan: not(anyOf(r, s)) == allOf(not r, not s) and not(allOf(r, s)) == anyOf(not r, not s)")
    func deMorgan() throws {
        try self.forEachCase(seed: 0x5EED_0004) { random, request, r in
            let s = RandomRequirement.object(&random, depth: 2)
            let notAny = try self.evaluate(["not": ["anyOf": [r, s]]], request) == .holds
            let allNot = try self.evaluate(["allOf": [["not": r], ["not": s]]], request) == .holds
            #expect(notAny == allNot, "\(r.jsonText) / \(s.jsonText)")
            let notAll = try self.evaluate(["not": ["allOf": [r, s]]], request) == .holds
            let anyNot = try self.evaluate(["anyOf": [["not": r], ["not": s]]], request) == .holds
            #expect(notAll == anyNot, "\(r.jsonText) / \(s.jsonText)")
            let rHolds = try self.evaluate(r, request) == .holds
            let sHolds = try self.evaluate(s, request) == .holds
            #expect(notAny == !(rHolds || sHolds))
        }
    }

    @Test("the flat form equals allOf of its single-pair objects, failing at the same pair")
    func flatFormIsAllOf() throws {
        var random = SeededRandom(seed: 0x5EED_0005)
        for _ in 0..<Self.cases {
            let request = RandomRequest(&random)
            let pairs = RandomRequirement.fieldPairs(&random, count: random.int(1...5))
            let flat = try self.evaluate(.object(JSONObject(pairs)), request)
            let split = try self.evaluate(["allOf": .array(pairs.map { .object(JSONObject([$0])) })], request)
            switch flat {
            case .holds:
                #expect(split == .holds)
            case .fails(let clause):
                let index = try #require(pairs.firstIndex { RequirementPath.member(Self.base, $0.0) == clause })
                #expect(split == .fails(clause: RequirementPath.member(Self.base + ".allOf[\(index)]", pairs[index].0)))
            }
        }
    }

    @Test("the old flat form (plain values on claims and profile) means what the old loop meant")
    func oldFlatForm() throws {
        var random = SeededRandom(seed: 0x5EED_0006)
        for _ in 0..<Self.cases {
            let request = RandomRequest(&random)
            let pairs = RandomRequirement.fieldPairs(&random, count: random.int(1...4), plainValuesOnIdentity: true)
            let verdict = try self.evaluate(.object(JSONObject(pairs)), request)
            // The evaluator before policies: every pair in order, IdentityLookup's equality rule.
            let fields = self.fields(request)
            let firstFailing = pairs.first { key, expected in
                let path = IdentityValuePath(parsing: key)!
                return !IdentityLookup.satisfies(fields.value(path), expected: expected, name: path.name)
            }
            #expect(verdict == firstFailing.map { .fails(clause: RequirementPath.member(Self.base, $0.0)) } ?? .holds)
        }
    }

    // MARK: Helpers

    private func forEachCase(
        seed: UInt64, _ body: (inout SeededRandom, RandomRequest, JSONValue) throws -> Void
    ) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<Self.cases {
            let request = RandomRequest(&random)
            let requirement = RandomRequirement.object(&random, depth: 2)
            try body(&random, request, requirement)
        }
    }

    func evaluate(_ require: JSONValue, _ request: RandomRequest) throws -> RequirementVerdict {
        RequirementCheck.evaluate(try Requirement(parsing: require, path: Self.base), self.fields(request))
    }

    func fields(_ request: RandomRequest) -> IdentityFields {
        let token = VerifiedToken(
            issuerIndex: 0, generation: 0, claims: request.claims, subject: nil, expiresAt: 4_102_444_800,
            notBefore: nil, issuedAt: nil, leewaySeconds: 0)
        var identity = Identity(token: token, accessToken: self.fixture.bearer("t"), issuer: TestKeys.issuer)
        identity.profile = request.profile
        var authRequest = self.fixture.request(request.headers.map { ("X-Tenant", $0) }, peer: request.peer)
        authRequest.method = HTTPMethod(rawValue: request.method)
        return IdentityFields(identity: identity, request: authRequest)
    }
}

// MARK: - Generation

/// SplitMix64: small, seeded, the same sequence on every platform.
struct SeededRandom {
    private var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(self.next() % UInt64(range.count))
    }

    mutating func chance(_ percent: Int) -> Bool { self.int(0...99) < percent }

    mutating func pick<T>(_ values: [T]) -> T { values[self.int(0...(values.count - 1))] }
}

/// A request's identity and facts, drawn from small sets so that matchers often meet values.
struct RandomRequest: CustomStringConvertible {
    static let words = ["a", "b", "ab", "ba", "admin", "read"]
    static let methods = ["GET", "POST", "PUT"]
    static let peers = ["10.0.0.5", "10.1.2.3", "192.168.1.7", "::ffff:10.0.0.9", "fd00::1", "2001:db8::7"]

    var claims: JSONObject = [:]
    var profile: JSONObject?
    var method: String
    var headers: [String]
    var peer: String

    init(_ random: inout SeededRandom) {
        if random.chance(80) { self.claims["role"] = .string(random.pick(Self.words)) }
        if random.chance(80) { self.claims["groups"] = Self.words(&random, upTo: 3) }
        if random.chance(70) {
            self.claims["scope"] = .string(
                Self.words(&random, upTo: 3).arrayValue!.map { $0.stringValue! }.joined(separator: " "))
        }
        if random.chance(60) {
            let words = Self.words(&random, upTo: 3)
            self.claims["scp"] =
                random.chance(50) ? .string(words.arrayValue!.map { $0.stringValue! }.joined(separator: " ")) : words
        }
        if random.chance(60) { self.claims["org"] = ["tier": .string(random.pick(Self.words))] }
        if random.chance(60) { self.claims["level"] = .number(JSONNumber(random.int(0...3))) }
        if random.chance(60) { self.claims["flag"] = random.pick([true, false, .null]) }
        self.profile = random.chance(60) ? ["dept": .string(random.pick(Self.words))] : nil
        self.method = random.pick(Self.methods)
        self.headers = (0..<random.int(0...2)).map { _ in random.pick(Self.words) }
        self.peer = random.pick(Self.peers)
    }

    static func words(_ random: inout SeededRandom, upTo count: Int) -> JSONValue {
        .array((0..<random.int(0...count)).map { _ in .string(random.pick(Self.words)) })
    }

    var description: String {
        "claims \(JSONValue.object(self.claims).jsonText), profile \(self.profile.map { JSONValue.object($0).jsonText } ?? "none"), \(self.method), x-tenant \(self.headers), \(self.peer)"
    }
}

/// Random requirements as configuration JSON: every field source and every operator.
enum RandomRequirement {
    static let identityFields = [
        "claims.role", "claims.groups", "claims.scope", "claims.scp", "claims.org.tier", "claims.level", "claims.flag",
        "profile.dept",
    ]
    static let requestFields = ["request.method", "request.header.x-tenant", "client.ip"]

    static func object(_ random: inout SeededRandom, depth: Int) -> JSONValue {
        var entries: [(String, JSONValue)] = []
        var combinators = ["anyOf", "allOf", "not"]
        for (key, value) in self.fieldPairs(&random, count: random.int(0...2)) { entries.append((key, value)) }
        if depth > 0 {
            for _ in 0..<random.int(entries.isEmpty ? 1...2 : 0...2) {
                let name = combinators.remove(at: random.int(0...(combinators.count - 1)))
                switch name {
                case "not": entries.append((name, self.object(&random, depth: depth - 1)))
                default:
                    entries.append(
                        (name, .array((0..<random.int(1...3)).map { _ in self.object(&random, depth: depth - 1) })))
                }
            }
        }
        if entries.isEmpty { entries = self.fieldPairs(&random, count: 1) }
        // Members in a random order: clauses and combinators interleave.
        for index in entries.indices.reversed() { entries.swapAt(index, random.int(0...index)) }
        return .object(JSONObject(entries))
    }

    /// `count` pairs on distinct fields. `plainValuesOnIdentity`: the form before policies.
    static func fieldPairs(
        _ random: inout SeededRandom, count: Int, plainValuesOnIdentity: Bool = false
    ) -> [(String, JSONValue)] {
        var fields = plainValuesOnIdentity ? self.identityFields : self.identityFields + self.requestFields
        var pairs: [(String, JSONValue)] = []
        for _ in 0..<count {
            let field = fields.remove(at: random.int(0...(fields.count - 1)))
            pairs.append((field, plainValuesOnIdentity ? self.value(&random) : self.matcher(&random, field: field)))
        }
        return pairs
    }

    static func value(_ random: inout SeededRandom) -> JSONValue {
        switch random.int(0...9) {
        case 0: return .number(JSONNumber(random.int(0...3)))
        case 1: return random.pick([true, false, .null])
        case 2: return RandomRequest.words(&random, upTo: 2)
        default: return .string(random.pick(RandomRequest.words))
        }
    }

    static func matcher(_ random: inout SeededRandom, field: String) -> JSONValue {
        let strings: [String]
        switch field {
        case "request.method": strings = RandomRequest.methods + ["get"]
        case "client.ip": strings = RandomRequest.peers + ["10.0.0.9"]
        default: strings = RandomRequest.words
        }
        let onRequest = field.hasPrefix("request.") || field == "client.ip"
        switch random.int(0...9) {
        case 0, 1, 2:
            return onRequest ? .string(random.pick(strings)) : self.value(&random)
        case 3, 4:
            return [
                "in": .array(
                    (0..<random.int(1...3)).map { _ in onRequest ? .string(random.pick(strings)) : self.value(&random) }
                )
            ]
        case 5:
            if field == "client.ip" {
                return [
                    "cidr": .array([.string(random.pick(["10.0.0.0/8", "fd00::/8", "192.168.0.0/16", "10.0.0.0/31"]))])
                ]
            }
            return ["prefix": .string(String(random.pick(strings).prefix(random.int(1...2))))]
        case 6:
            if field == "client.ip" { return ["cidr": ["10.0.0.0/16", "2001:db8::/32"]] }
            return ["suffix": .string(String(random.pick(strings).suffix(random.int(1...2))))]
        default:
            return ["exists": .bool(random.chance(50))]
        }
    }
}

// MARK: - The reference

/// What a requirement means, written again from docs/policies.md without the product's
/// evaluator: the oracle the generated cases are checked against. Deliberately plain: JSON in,
/// `split`, `SocketAddress` and the `CIDR` of `trustedProxies` for addresses.
struct Reference {
    let request: RandomRequest

    /// nil when `requirement` holds, else the path of its first failing clause.
    func failingPath(_ requirement: JSONValue, path: String) -> String? {
        for (key, value) in requirement.objectValue!.entries {
            let memberPath = Self.member(path, key)
            switch key {
            case "anyOf":
                let branches = value.arrayValue!
                if !branches.indices.contains(where: {
                    self.failingPath(branches[$0], path: "\(memberPath)[\($0)]") == nil
                }) {
                    return memberPath
                }
            case "allOf":
                for (index, element) in value.arrayValue!.enumerated() {
                    if let failing = self.failingPath(element, path: "\(memberPath)[\(index)]") { return failing }
                }
            case "not":
                if self.failingPath(value, path: memberPath) == nil { return memberPath }
            default:
                if !self.matches(key, value) { return memberPath }
            }
        }
        return nil
    }

    static func member(_ base: String, _ key: String) -> String {
        let identifier =
            key.first.map { $0.isLetter || $0 == "_" } == true
            && key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        return identifier ? "\(base).\(key)" : "\(base)[\"\(key)\"]"
    }

    /// The values a matcher may hold for: the value, its elements, the words of a list string;
    /// for a header, its lines. nil: the field is absent.
    func candidates(_ field: String) -> (present: Bool, values: [JSONValue]) {
        switch field {
        case "request.method": return (true, [.string(self.request.method)])
        case "request.header.x-tenant":
            return (!self.request.headers.isEmpty, self.request.headers.map(JSONValue.string))
        case "client.ip": return (true, [.string(self.request.peer)])
        default: break
        }
        let source = field.hasPrefix("claims.") ? self.request.claims : self.request.profile
        let name = String(field.drop { $0 != "." }.dropFirst())
        var value: JSONValue? = source.flatMap { $0[name] }
        if value == nil, let source {
            value = .object(source)
            for segment in name.split(separator: ".") { value = value?[String(segment)] }
        }
        guard let value else { return (false, []) }
        if value == JSONValue.null { return (false, [JSONValue.null]) }
        var values = [value]
        if case .array(let elements) = value { values += elements }
        if name == "scope" || name == "scp", case .string(let text) = value {
            values += text.split(separator: " ").map { .string(String($0)) }
        }
        return (true, values)
    }

    func matches(_ field: String, _ matcher: JSONValue) -> Bool {
        let (present, values) = self.candidates(field)
        let strings = values.compactMap(\.stringValue)
        guard case .object(let object) = matcher else { return self.equal(field, values, matcher) }
        let (name, argument) = object.entries[0]
        switch name {
        case "in": return argument.arrayValue!.contains { self.equal(field, values, $0) }
        case "prefix": return strings.contains { $0.hasPrefix(argument.stringValue!) }
        case "suffix": return strings.contains { $0.hasSuffix(argument.stringValue!) }
        case "exists": return present == argument.boolValue!
        case "cidr":
            return argument.arrayValue!.contains { network in
                strings.contains { Self.address($0).map(CIDR(parsing: network.stringValue!)!.contains) ?? false }
            }
        default: fatalError("operator \(name)")
        }
    }

    func equal(_ field: String, _ values: [JSONValue], _ expected: JSONValue) -> Bool {
        switch field {
        case "request.method": return values.contains(.string(expected.stringValue!.uppercased()))
        case "client.ip":
            let wanted = Self.address(expected.stringValue!)
            return values.contains { Self.address($0.stringValue!) == wanted }
        default: return values.contains(expected)
        }
    }

    /// The address, an IPv4-mapped IPv6 one as IPv4.
    static func address(_ text: String) -> SocketAddress? {
        let lower = text.lowercased()
        if lower.hasPrefix("::ffff:"), lower.contains(".") {
            return try? SocketAddress(ipAddress: String(text.dropFirst(7)), port: 0)
        }
        return try? SocketAddress(ipAddress: text, port: 0)
    }
}
