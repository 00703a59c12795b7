/// Experiment 1: NIOHTTP2's field name and value validation, upstream against patched.
enum ValidationExperiment {
    /// The fields h2load (or curl) sends on each request to the gateway, with the bench token.
    static func requestFields(token: String) -> [(name: String, value: String)] {
        [
            (":method", "GET"), (":scheme", "https"), (":authority", "127.0.0.1:8443"), (":path", "/api/orders"),
            ("user-agent", "h2load nghttp2/1.59.0"), ("accept", "*/*"), ("accept-encoding", "gzip, deflate"),
            ("authorization", token),
        ]
    }

    /// Runs every validator, upstream and patched (both paths), over every input; returns the
    /// number of disagreements, after printing the first few.
    static func checkAgreement(token: String) -> Int {
        var inputs = self.agreementInputs(token: token)
        inputs += self.requestFields(token: token).flatMap { [$0.name, $0.value] }
        var disagreements = 0
        var accepted = (name: 0, value: 0, pseudo: 0)
        for input in inputs {
            let checks: [(String, Bool, Bool, Bool)] = [
                (
                    "name", UpstreamValidation.isValidFieldName(input), PatchedValidation.isValidFieldName(input),
                    PatchedValidation.isValidFieldNameFallback(input)
                ),
                (
                    "value", UpstreamValidation.isValidFieldValue(input), PatchedValidation.isValidFieldValue(input),
                    PatchedValidation.isValidFieldValueFallback(input)
                ),
                (
                    "pseudo value", UpstreamValidation.isValidPseudoHeaderValue(input),
                    PatchedValidation.isValidPseudoHeaderValue(input),
                    PatchedValidation.isValidPseudoHeaderValueFallback(input)
                ),
            ]
            for (kind, upstream, patched, fallback) in checks where upstream != patched || upstream != fallback {
                disagreements += 1
                if disagreements <= 10 {
                    print(
                        "DISAGREE \(kind) \(Array(input.utf8)): upstream \(upstream), patched \(patched), "
                            + "fallback \(fallback)"
                    )
                }
            }
            accepted.name += checks[0].1 ? 1 : 0
            accepted.value += checks[1].1 ? 1 : 0
            accepted.pseudo += checks[2].1 ? 1 : 0
        }
        print(
            "agreement: \(inputs.count) inputs × 3 validators, \(disagreements) disagreements "
                + "(upstream accepted \(accepted.name) as names, \(accepted.value) as values, "
                + "\(accepted.pseudo) as pseudo-header values)"
        )
        return disagreements
    }

    /// Every byte alone; every ASCII byte at every position of strings 1 to 24 bytes long (so at
    /// every lane of the 8-byte words and in the tail), with and without a leading colon; non-ASCII
    /// characters at every position; whitespace and CR/LF/NUL around and inside the token; and
    /// seeded random strings.
    static func agreementInputs(token: String) -> [String] {
        var inputs = (0...255).map { String(decoding: [UInt8($0)], as: UTF8.self) }
        inputs += ["", ":", "::", ":a", "a:", "A", ":Path", "x-Forwarded-For"]
        for length in 1...24 {
            for position in 0..<length {
                for byte in UInt8(0)..<0x80 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = byte
                    inputs.append(String(decoding: bytes, as: UTF8.self))
                    inputs.append(":" + String(decoding: bytes, as: UTF8.self))
                }
                for character in ["é", "\u{80}", "ÿ", "€", "😀", "\u{7F}", "\t", " "] {
                    var characters = [String](repeating: "a", count: length)
                    characters[position] = character
                    inputs.append(characters.joined())
                }
            }
        }
        for edit in ["", " ", "\t", "\r", "\n", "\0", "\r\n", "é", "\u{7F}"] {
            inputs += [edit + token, token + edit]
            let middle = token.index(token.startIndex, offsetBy: token.count / 2)
            inputs.append(String(token[..<middle]) + edit + String(token[middle...]))
        }
        var random = SplitMix64(seed: 0x29)
        let common = Array("abcdefghijklmnopqrstuvwxyz0123456789-_.:~!#$%&'*+^`| ABCXYZ/=,;\"".utf8)
        for _ in 0..<20_000 {
            let length = Int(random.next() % 40)
            let bytes = (0..<length).map { _ -> UInt8 in
                let draw = random.next()
                return draw % 16 == 0 ? UInt8(truncatingIfNeeded: draw >> 8) : common[Int(draw >> 8) % common.count]
            }
            inputs.append(String(decoding: bytes, as: UTF8.self))
        }
        return inputs
    }

    static func measureAll(token: String) {
        let fields = self.requestFields(token: token)
        let names = fields.map(\.name)
        let bearer = token
        print("| case | upstream ns/op (worst) | patched ns/op (worst) | gain |")
        print("|---|---|---|---|")
        report(
            "bearer token value (\(bearer.utf8.count) bytes), isValidFieldValue",
            upstream: measure(iterations: 200_000) { _ in UpstreamValidation.isValidFieldValue(opaque(bearer)) ? 1 : 0
            },
            patched: measure(iterations: 200_000) { _ in PatchedValidation.isValidFieldValue(opaque(bearer)) ? 1 : 0 }
        )
        report(
            "\(names.count) request field names, isValidFieldName",
            upstream: measure(iterations: 200_000) { _ in
                opaque(names).reduce(0) { $0 + (UpstreamValidation.isValidFieldName($1) ? 1 : 0) }
            },
            patched: measure(iterations: 200_000) { _ in
                opaque(names).reduce(0) { $0 + (PatchedValidation.isValidFieldName($1) ? 1 : 0) }
            }
        )
        report(
            "\(fields.count) request fields, names and values (as `legalHeaderField`)",
            upstream: measure(iterations: 200_000) { _ in
                opaque(fields).reduce(0) { $0 + (self.upstreamValidField($1.name, $1.value) ? 1 : 0) }
            },
            patched: measure(iterations: 200_000) { _ in
                opaque(fields).reduce(0) { $0 + (self.patchedValidField($1.name, $1.value) ? 1 : 0) }
            }
        )
        let withoutToken = Array(fields.dropLast())
        report(
            "the same \(withoutToken.count) fields without authorization",
            upstream: measure(iterations: 200_000) { _ in
                opaque(withoutToken).reduce(0) { $0 + (self.upstreamValidField($1.name, $1.value) ? 1 : 0) }
            },
            patched: measure(iterations: 200_000) { _ in
                opaque(withoutToken).reduce(0) { $0 + (self.patchedValidField($1.name, $1.value) ? 1 : 0) }
            }
        )
    }

    /// The name check, then the value check that `HeaderFieldName.legalHeaderField` picks.
    static func upstreamValidField(_ name: String, _ value: String) -> Bool {
        guard UpstreamValidation.isValidFieldName(name) else {
            return false
        }
        return name.utf8.first == UInt8(ascii: ":")
            ? UpstreamValidation.isValidPseudoHeaderValue(value) : UpstreamValidation.isValidFieldValue(value)
    }

    static func patchedValidField(_ name: String, _ value: String) -> Bool {
        guard PatchedValidation.isValidFieldName(name) else {
            return false
        }
        return name.utf8.first == UInt8(ascii: ":")
            ? PatchedValidation.isValidPseudoHeaderValue(value) : PatchedValidation.isValidFieldValue(value)
    }
}

/// A small seeded generator, so that the random inputs are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

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
