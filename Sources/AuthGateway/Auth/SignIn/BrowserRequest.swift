import NIOHTTP1

/// What the gateway reads of a request to tell a browser apart (docs/browser-sign-in.md).
enum BrowserRequest {
    /// A top-level browser navigation — `GET`/`HEAD`, `Accept` with `text/html`, no
    /// `Authorization`, `Sec-Fetch-Mode` absent or `navigate` — is sent to sign in; API calls,
    /// `fetch`, gRPC get 401, never a redirect.
    static func isNavigation(method: HTTPMethod, headers: HTTPHeaders) -> Bool {
        guard method == .GET || method == .HEAD else { return false }
        guard !headers.contains(name: "authorization") else { return false }
        if let mode = headers.first(name: "sec-fetch-mode"), !ASCII.equalsIgnoringCase(mode, "navigate") {
            return false
        }
        return headers[canonicalForm: "accept"].contains { Self.namesHTML($0) }
    }

    /// `text/html` in one element of `Accept` (parameters such as `q=` allowed; `q=0` refuses).
    private static func namesHTML(_ element: Substring) -> Bool {
        let parts = element.split(separator: ";")
        guard let type = parts.first, ASCII.equalsIgnoringCase(ASCII.trimmingOWS(type), "text/html") else {
            return false
        }
        for parameter in parts.dropFirst() {
            let trimmed = ASCII.trimmingOWS(parameter)
            if ASCII.hasPrefixIgnoringCase(trimmed, "q="), let quality = Double(trimmed.dropFirst(2)), quality <= 0 {
                return false
            }
        }
        return true
    }

    /// Whether an answer the gateway makes for a sign-in endpoint should be a small HTML page:
    /// `Accept` prefers `text/html` over JSON.
    static func prefersHTML(_ headers: HTTPHeaders) -> Bool {
        var html = -1.0
        var json = -1.0
        for element in headers[canonicalForm: "accept"] {
            let parts = element.split(separator: ";")
            guard let type = parts.first.map({ ASCII.trimmingOWS($0).lowercased() }) else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let trimmed = ASCII.trimmingOWS(parameter)
                if ASCII.hasPrefixIgnoringCase(trimmed, "q="), let value = Double(trimmed.dropFirst(2)) {
                    quality = value
                }
            }
            if type == "text/html" { html = max(html, quality) }
            if type == "application/json" || type == "application/problem+json" { json = max(json, quality) }
        }
        return html > 0 && html > json
    }

    /// CSRF (docs/browser-sign-in.md): a request authenticated by the session cookie with an
    /// unsafe method must come from the gateway's own origin — `Sec-Fetch-Site: same-origin`
    /// (or `none`: typed by the user), or an `Origin` equal to `publicBaseURL`.
    static func isSameOrigin(method: HTTPMethod, headers: HTTPHeaders, publicBaseURL: String) -> Bool {
        switch method {
        case .GET, .HEAD, .OPTIONS: return true
        default: break
        }
        if let site = headers.first(name: "sec-fetch-site"),
            ASCII.equalsIgnoringCase(site, "same-origin") || ASCII.equalsIgnoringCase(site, "none")
        {
            return true
        }
        if let origin = headers.first(name: "origin") { return origin == publicBaseURL }
        return false
    }
}
