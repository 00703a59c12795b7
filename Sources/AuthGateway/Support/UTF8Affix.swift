/// `prefix` and `suffix` of policies (docs/policies.md): whether a text starts or ends with
/// another, comparing UTF-8 bytes. Exact and cheap: `String.hasPrefix` on a `Substring` walks
/// `Character`s, and requirements compare per request.
enum UTF8Affix {
    static func hasPrefix(_ text: Substring, _ affix: String) -> Bool {
        let bytes = text.utf8, wanted = affix.utf8
        guard bytes.count >= wanted.count else { return false }
        return bytes.prefix(wanted.count).elementsEqual(wanted)
    }

    static func hasSuffix(_ text: Substring, _ affix: String) -> Bool {
        let bytes = text.utf8, wanted = affix.utf8
        guard bytes.count >= wanted.count else { return false }
        return bytes.suffix(wanted.count).elementsEqual(wanted)
    }
}
