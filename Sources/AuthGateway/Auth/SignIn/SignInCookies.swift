import NIOHTTP1

/// The cookies of browser sign-in (docs/browser-sign-in.md): the session cookie (a handle,
/// `HttpOnly`, `SameSite=Lax`, `Path=/`, no `Domain`, `Secure` and the `__Host-` prefix over
/// https) and one cookie per sign-in in progress.
struct SignInCookies: Sendable {
    let configuration: BrowserSignInConfiguration

    private var attributes: String {
        "; Path=/; HttpOnly; SameSite=Lax" + (self.configuration.isSecure ? "; Secure" : "")
    }

    func session(_ handle: SessionHandle) -> String {
        "\(self.configuration.sessionCookieName)=\(handle.value)\(self.attributes); Max-Age=\(self.configuration.sessionMaxSeconds)"
    }

    var clearingSession: String { Self.clearing(self.configuration.sessionCookieName, attributes: self.attributes) }

    func flowName(_ id: String) -> String { self.configuration.flowCookiePrefix + id }

    func flow(_ id: String, value: String) -> String {
        "\(self.flowName(id))=\(value)\(self.attributes); Max-Age=\(Int(SignInFlow.lifetimeSeconds))"
    }

    func clearingFlow(named name: String) -> String { Self.clearing(name, attributes: self.attributes) }

    private static func clearing(_ name: String, attributes: String) -> String {
        "\(name)=\(attributes); Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"
    }

    /// The session handle a request presents, if its cookie has a handle's shape.
    func sessionHandle(in headers: HTTPHeaders) -> SessionHandle? {
        for (name, value) in headers where ASCII.equalsIgnoringCase(name, "cookie") {
            for cookie in CookieHeader.pairs(in: value)
            where ASCII.bytesEqual(cookie.name, self.configuration.sessionCookieName) {
                if let handle = SessionHandle(cookieValue: cookie.value) { return handle }
            }
        }
        return nil
    }

    /// Whether the request carries a session cookie at all (well-formed or not).
    func hasSessionCookie(in headers: HTTPHeaders) -> Bool {
        headers[canonicalForm: "cookie"].contains { value in
            CookieHeader.pairs(in: String(value)).contains {
                ASCII.bytesEqual($0.name, self.configuration.sessionCookieName)
            }
        }
    }

    /// The flow cookies a request carries: name (with the prefix) and value.
    func flows(in headers: HTTPHeaders) -> [(name: String, value: Substring)] {
        var flows: [(name: String, value: Substring)] = []
        for (name, value) in headers where ASCII.equalsIgnoringCase(name, "cookie") {
            for cookie in CookieHeader.pairs(in: value) where cookie.name.hasPrefix(self.configuration.flowCookiePrefix)
            {
                flows.append((String(cookie.name), cookie.value))
            }
        }
        return flows
    }
}
