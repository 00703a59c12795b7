#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The long texts of a connection's last request head, by field position, so that a text the
/// client repeats byte for byte — its bearer token, `User-Agent`, a browser's long field names —
/// becomes the same `String` again instead of a new one. A `String` longer than the 15 bytes it
/// holds inline costs an allocation, a UTF-8 validation and a copy; a repeat costs one byte
/// comparison (docs/benchmarks.md, "the request's repeated texts").
///
/// One per client connection (`RequestParser`), used only on its loop. Keyed by position: a
/// keep-alive client sends its fields in the same order each time, and a miss costs only a
/// length comparison (or the byte comparison, when the lengths agree) before the `String` it
/// would have made anyway. The texts are those the connection already holds while it parses
/// the head; between requests an idle connection keeps at most `maxKeptBytes` of them.
struct RepeatedFieldTexts {
    /// Texts up to this many bytes are inline `String`s: never kept.
    static let inlineBytes = 15
    /// What a connection keeps between requests, at most (a token and a few long fields fit).
    static let maxKeptBytes = 4096
    /// Texts past this position (names and values count apart: the 32nd field's value is the
    /// last) are never kept.
    static let maxPositions = 64

    private var texts: [String] = []
    private var keptBytes = 0

    /// The text of `bytes` (UTF-8, already checked by `HeadScanner`), at `position` of its head.
    mutating func text(at position: Int, _ bytes: UnsafeRawBufferPointer) -> String {
        guard bytes.count > Self.inlineBytes, position < Self.maxPositions else {
            return String(decoding: bytes, as: UTF8.self)
        }
        if position < self.texts.count, Self.equal(self.texts[position], bytes) {
            return self.texts[position]
        }
        let text = String(decoding: bytes, as: UTF8.self)
        self.keep(text, at: position)
        return text
    }

    private mutating func keep(_ text: String, at position: Int) {
        while self.texts.count <= position { self.texts.append("") }
        self.keptBytes -= self.texts[position].utf8.count
        let fits = self.keptBytes + text.utf8.count <= Self.maxKeptBytes
        self.texts[position] = fits ? text : ""
        if fits { self.keptBytes += text.utf8.count }
    }

    private static func equal(_ text: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard text.utf8.count == bytes.count else { return false }
        return text.utf8.withContiguousStorageIfAvailable { stored in
            memcmp(stored.baseAddress!, bytes.baseAddress!, bytes.count) == 0
        } ?? false
    }
}
