import Testing

@testable import AuthGateway

@Suite("RouteHostTable")
struct RouteHostTableTests {
    @Test("lowerCased changes A-Z, and only them, in every byte of a word")
    func lowerCasedEveryByte() {
        var random = SeededRandom(seed: 0x5EED_4301)
        for position in 0..<8 {
            for byte in 0...255 {
                var bytes = (0..<8).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                bytes[position] = UInt8(byte)
                let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                let lowered = withUnsafeBytes(of: RouteHostTable.lowerCased(word)) { Array($0) }
                #expect(lowered == bytes.map(ASCII.lower), "byte \(byte) at \(position) among \(bytes)")
            }
        }
    }

    @Test("hosts are found in any case, at every length around the eight-byte words; others are not")
    func lookups() {
        var random = SeededRandom(seed: 0x5EED_4302)
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789.-".utf8)
        var hosts: [[UInt8]] = (0...40).map { length in (0..<length).map { _ in random.pick(letters) } }
        hosts += (0..<1000).map { Array("host-\($0).example.com".utf8) }
        hosts += [Array("a".utf8), Array("ab".utf8), Array("abcdefgh".utf8), Array("abcdefghi".utf8)]
        var seen: Set<[UInt8]> = []
        hosts = hosts.filter { seen.insert($0).inserted }
        var table = RouteHostTable(capacity: hosts.count)
        for (index, host) in hosts.enumerated() { table.add(host, root: Int32(index)) }
        #expect(table.count == hosts.count)
        for (index, host) in hosts.enumerated() {
            let mixed = host.map { random.chance(50) ? ASCII.lower($0) ^ ($0 >= 97 && $0 <= 122 ? 0x20 : 0) : $0 }
            let text = String(decoding: mixed, as: UTF8.self)
            #expect(table.root(of: text[...]) == Int32(index), "\(text)")
            // A substring that does not start at its string's start.
            #expect(table.root(of: ("x" + text).dropFirst()) == Int32(index), "\(text)")
        }
        for missing in ["host-1000.example.com", "host-1.example.co", "abcdefg", "abcdefghij", "ü.example"] {
            #expect(table.root(of: missing[...]) == nil, "\(missing)")
        }
        #expect(RouteHostTable(capacity: 0).root(of: "a") == nil)
    }
}
