/// HTML text escaping for the few pages the gateway writes itself (and the demo provider's).
package enum HTML {
    /// `text` with `& < > " '` replaced by character references: safe in element content and
    /// in quoted attribute values.
    package static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.unicodeScalars.append(character)
            }
        }
        return output
    }
}
