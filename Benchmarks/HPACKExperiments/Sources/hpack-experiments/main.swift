import Foundation

/// The bench's 700-byte `Authorization` value: `Bearer ` and the RS256 token the bench signs, read
/// from TOKEN_FILE (first argument), else from the bench's usual place, else a generated
/// base64url string of the same length.
func benchToken() -> String {
    let path = CommandLine.arguments.dropFirst().first ?? ".bench-work/bench/keys/tokens/valid-rs256.jwt"
    if let jwt = try? String(contentsOfFile: path, encoding: .utf8) {
        print("token: \(path)")
        return "Bearer " + jwt.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    print("token: generated (no \(path))")
    let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    var random = SplitMix64(seed: 700)
    var body: [UInt8] = []
    for index in 0..<683 {
        body.append(index == 36 || index == 400 ? UInt8(ascii: ".") : alphabet[Int(random.next() % 64)])
    }
    return "Bearer " + String(decoding: body, as: UTF8.self)
}

let token = benchToken()
print("## Field validation")
guard ValidationExperiment.checkAgreement(token: token) == 0 else {
    print("upstream and patched validation disagree")
    exit(1)
}
ValidationExperiment.measureAll(token: token)

print("## Huffman decoding")
guard HuffmanExperiment.checkAgreement(token: token) == 0 else {
    print("upstream and patched Huffman decoding disagree")
    exit(1)
}
HuffmanExperiment.measureAll(token: token)
