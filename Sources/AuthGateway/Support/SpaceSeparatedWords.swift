/// The words of a space-separated list such as a `scope` claim (`"read  write"`: `read`,
/// `write`; runs of spaces separate, nothing else does), as slices of the string: walking
/// them allocates nothing, unlike `split`, and finds the same words as
/// `split(separator: " ")`. ASCII text (every scope seen in practice) is cut by its bytes;
/// other text by `Character`, so that a space carrying a combining mark separates nothing.
struct SpaceSeparatedWords: Sequence, IteratorProtocol {
    private var rest: Substring
    private let isASCII: Bool

    init(_ text: String) {
        self.rest = text[...]
        self.isASCII = text.utf8.allSatisfy { $0 < 0x80 }
    }

    mutating func next() -> Substring? {
        self.isASCII ? self.nextByBytes() : self.nextByCharacters()
    }

    private mutating func nextByBytes() -> Substring? {
        let bytes = self.rest.utf8
        guard let start = bytes.firstIndex(where: { $0 != UInt8(ascii: " ") }) else {
            self.rest = self.rest[self.rest.endIndex...]
            return nil
        }
        let end = bytes[start...].firstIndex(of: UInt8(ascii: " ")) ?? bytes.endIndex
        let word = self.rest[start..<end]
        self.rest = self.rest[end...]
        return word
    }

    private mutating func nextByCharacters() -> Substring? {
        guard let start = self.rest.firstIndex(where: { $0 != " " }) else {
            self.rest = self.rest[self.rest.endIndex...]
            return nil
        }
        let end = self.rest[start...].firstIndex(of: " ") ?? self.rest.endIndex
        let word = self.rest[start..<end]
        self.rest = self.rest[end...]
        return word
    }
}
