/// `Set-Cookie` values for session cookies (docs/authentication.md, "Transparent
/// refresh": HttpOnly, Secure when TLS, SameSite=Lax, Path=/).
struct SessionCookies {
    let isTLS: Bool

    func setting(_ name: String, to value: String) -> String {
        "\(name)=\(value); Path=/; HttpOnly; SameSite=Lax" + (self.isTLS ? "; Secure" : "")
    }

    /// Whether `value` can be sent as a cookie value or header value unchanged: visible ASCII
    /// without separators (RFC 6265 §4.1.1 cookie-octets).
    static func isSafeValue(_ value: String) -> Bool {
        !value.isEmpty
            && value.utf8.allSatisfy { byte in
                byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: ",")
                    && byte != UInt8(ascii: ";") && byte != UInt8(ascii: "\\")
            }
    }

    func clearing(_ name: String) -> String {
        "\(name)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax"
            + (self.isTLS ? "; Secure" : "")
    }
}
