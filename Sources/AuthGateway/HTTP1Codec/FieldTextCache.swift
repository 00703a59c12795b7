/// The texts of an HTTP/1.1 backend's response fields that an HTTP/2 client connection has seen
/// lately, so that a field repeated response after response (`date` within its second,
/// `content-type`, `cache-control`, a long name such as `strict-transport-security`) becomes
/// the same `String` again instead of a new one: HPACK takes `String`s, and one longer than the
/// 15 bytes a `String` holds inline is an allocation (docs/benchmarks.md, "Allocations").
///
/// One per connection, used only on its event loop: no lock. A handful of entries, replaced in
/// turn; a lookup compares bytes with each entry (a miss costs the comparisons plus the
/// allocation it would have made anyway). Names are cached lower-cased, keyed by their bytes as
/// sent; only texts that would allocate are cached.
struct FieldTextCache {
    static let capacity = 8
    /// Texts up to this many bytes are inline `String`s: never cached.
    static let inlineBytes = 15
    /// Longer texts are not cached (a cookie, a long `link`): they rarely repeat byte for byte.
    static let maxCachedBytes = 256

    private var entries: [(key: [UInt8], text: String)] = []
    private var next = 0

    init() { self.entries.reserveCapacity(Self.capacity) }

    /// The value at `bytes[start..<end]` as a `String`.
    mutating func value(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        self.text(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), lowercased: false)
    }

    /// The name at `bytes[start..<end]`, lower-cased.
    mutating func name(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        self.text(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), lowercased: true)
    }

    private mutating func text(_ bytes: UnsafeRawBufferPointer, lowercased: Bool) -> String {
        guard bytes.count > Self.inlineBytes, bytes.count <= Self.maxCachedBytes else {
            return Self.make(bytes, lowercased: lowercased)
        }
        // A name and a value with the same bytes are different texts: the key says which.
        let kind: UInt8 = lowercased ? 1 : 0
        for entry in self.entries
        where entry.key.count == bytes.count + 1 && entry.key.last == kind
            && entry.key.withUnsafeBytes({ $0.prefix(bytes.count).elementsEqual(bytes) })
        {
            return entry.text
        }
        let text = Self.make(bytes, lowercased: lowercased)
        var key = [UInt8](bytes)
        key.append(kind)
        if self.entries.count < Self.capacity {
            self.entries.append((key, text))
        } else {
            self.entries[self.next] = (key, text)
            self.next = (self.next + 1) % Self.capacity
        }
        return text
    }

    private static func make(_ bytes: UnsafeRawBufferPointer, lowercased: Bool) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        return lowercased ? text.lowercased() : text
    }
}
