/// `X-Request-Id` handling (docs/forwarding.md): a client's id is kept when it is 1–128 characters
/// of `A-Z a-z 0-9 . _ : -`; otherwise a new one is made.
enum RequestID {
    static func isWellFormed(_ value: some StringProtocol) -> Bool {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= 128 else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    static func forwardedOrNew(_ value: String?, using generator: inout some RandomNumberGenerator) -> String {
        if let value, Self.isWellFormed(value) { return value }
        return Self.generate(using: &generator)
    }

    private static let alphabet: [UInt8] = Array("0123456789abcdefghijklmnopqrstuv".utf8)

    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return Self.generate(using: &generator)
    }

    /// 15 characters of base32 (75 random bits). Fifteen is deliberate: Swift stores strings
    /// of up to 15 UTF-8 bytes inline, so a generated id costs no allocation per request.
    static func generate(using generator: inout some RandomNumberGenerator) -> String {
        var bits = generator.next() as UInt64
        var extra = generator.next() as UInt64
        return String(unsafeUninitializedCapacity: 15) { buffer in
            for index in 0..<15 {
                if index == 12 { (bits, extra) = (extra, 0) }
                buffer[index] = Self.alphabet[Int(bits & 31)]
                bits >>= 5
            }
            return 15
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a fast generator for request ids, one per event loop,
/// seeded from the system's random source. Request ids need to be unique, not secret; the
/// system generator costs a `getrandom` system call per number (measured: two per request).
struct RequestIDGenerator: RandomNumberGenerator {
    private var state: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        self.state = system.next()
    }

    /// A fixed seed: the same sequence every time (tests that replay a failure from its seed).
    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
