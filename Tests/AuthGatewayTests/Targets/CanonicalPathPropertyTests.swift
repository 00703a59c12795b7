import Testing

@testable import AuthGateway

/// Properties of the canonical path (docs/forwarding.md, "Request targets") over random
/// spellings made of the pieces that confuse servers: dots, slashes, backslashes, `;`, escapes
/// single and double, upper and lower case, control bytes, UTF-8 edge cases. Seeded: a failure
/// names its seed and spelling, and reproduces.
@Suite("CanonicalPath properties")
struct CanonicalPathPropertyTests {
    static let pieces: [String] = [
        "/", "/", "/", "//", ".", "..", "a", "b", "admin", "public", ";", ";x", "%3B", "%3b", "%2e", "%2E", "%2f",
        "%2F", "%5c", "%5C", "\\", "%25", "%252e", "%252F", "%2525", "%41", "%7e", "%7E", "~", "%20", "%3F", "%23",
        "%00", "%0a", "%7F", "%C3%A9", "%c3%a9", "%C0%AE", "%E2%80%AE", "%F0%9F%98%80", "%ED%A0%80", "%FF", "%", "%g1",
        "-", "_", ".well-known",
    ]

    static let settings: [PathSettings] = [
        PathSettings(),
        PathSettings(escapedSlashes: .decode),
        PathSettings(escapedSlashes: .keep),
        PathSettings(escapedSlashes: .reject, mergeSlashes: false),
        PathSettings(escapedSlashes: .decode, mergeSlashes: false),
    ]

    static func spelling(_ generator: inout SeededGenerator) -> String {
        let count = Int.random(in: 1...12, using: &generator)
        return "/" + (0..<count).map { _ in Self.pieces.randomElement(using: &generator)! }.joined()
    }

    static func canonical(_ path: String, _ settings: PathSettings) -> String? {
        try? CanonicalPath.make(path[...], settings: settings)
    }

    /// Every escape decoded, as a server that decodes the whole path reads it (bytes).
    static func decoded(_ path: String) -> [UInt8] {
        var output: [UInt8] = []
        let bytes = Array(path.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
            {
                output.append(value)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }

    @Test func canonicalOfCanonicalIsItself() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        var accepted = 0
        for _ in 0..<20000 {
            let spelling = Self.spelling(&generator)
            for settings in Self.settings {
                guard let once = Self.canonical(spelling, settings) else { continue }
                accepted += 1
                #expect(Self.canonical(once, settings) == once, "seed \(seed): \(spelling) → \(once) under \(settings)")
            }
        }
        // The generator must reach both outcomes for the property to say anything.
        #expect(accepted > 10000, "seed \(seed): only \(accepted) spellings accepted")
    }

    @Test func neverLongerThanTheInputOrItsDecodedForm() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<20000 {
            let spelling = Self.spelling(&generator)
            for settings in Self.settings {
                guard let canonical = Self.canonical(spelling, settings) else { continue }
                #expect(canonical.utf8.count <= spelling.utf8.count, "seed \(seed): \(spelling) → \(canonical)")
                #expect(
                    Self.decoded(canonical).count <= Self.decoded(spelling).count,
                    "seed \(seed): \(spelling) → \(canonical)")
            }
        }
    }

    @Test func noConfusingSequenceSurvivesTheDefaults() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededGenerator(seed: seed)
        var refused = 0
        for _ in 0..<20000 {
            let spelling = Self.spelling(&generator)
            guard let canonical = Self.canonical(spelling, PathSettings()) else {
                refused += 1
                continue
            }
            let upper = canonical.uppercased()
            for banned in ["//", "/./", "/../", "%2F", "%5C", "\\"] {
                #expect(!upper.contains(banned), "seed \(seed): \(spelling) → \(canonical) holds \(banned)")
            }
            #expect(!canonical.hasSuffix("/.") && !canonical.hasSuffix("/.."), "seed \(seed): \(spelling)")
            // What a decoding server reads names the same segments: no escape left to decode
            // into a slash, a dot segment or another escape.
            let plain = String(decoding: Self.decoded(canonical), as: UTF8.self)
            for banned in ["/./", "/../", "\\"] {
                #expect(!plain.contains(banned), "seed \(seed): \(spelling) → \(canonical) decodes to \(plain)")
            }
            #expect(!plain.hasSuffix("/.") && !plain.hasSuffix("/.."), "seed \(seed): \(spelling) → \(plain)")
        }
        #expect(refused > 1000, "seed \(seed): only \(refused) spellings refused")
    }
}

/// SplitMix64: a small seeded generator, so that a property failure reproduces from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D4_9BB1_33D1_11EB
        return z ^ (z >> 31)
    }
}
