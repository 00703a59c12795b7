/// The words of a space-separated list such as a `scope` claim (`"read  write"`: `read`,
/// `write`; runs of spaces separate, nothing else does), as slices of the string: walking
/// them allocates nothing, unlike `split`, and finds the same words (by `Character`, so a
/// space carrying a combining mark separates nothing, as with `split(separator: " ")`).
struct SpaceSeparatedWords: Sequence, IteratorProtocol {
    private var rest: Substring

    init(_ text: String) { self.rest = text[...] }

    mutating func next() -> Substring? {
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
