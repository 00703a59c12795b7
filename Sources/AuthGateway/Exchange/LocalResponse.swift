import NIOCore
import NIOHTTP1

/// A response the gateway writes itself: an error (problem document) or a health answer.
struct LocalResponse {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: String
    /// The gateway error behind it, for metrics and the access log.
    var error: GatewayError?
    /// An answer to another proxy's question (docs/authorizer.md): metrics and the access log
    /// label it `mode="authorizer"`.
    var authorizer = false

    /// An RFC 9457 problem document with the RFC 6750 headers (docs/errors.md).
    static func problem(
        _ error: GatewayError, requestID: String, extraHeaders: HeaderFields = []
    ) -> LocalResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/problem+json")
        headers.add(name: "Cache-Control", value: "no-store")
        if let challenge = error.wwwAuthenticate { headers.add(name: "WWW-Authenticate", value: challenge) }
        if let retryAfter = error.retryAfterSeconds { headers.add(name: "Retry-After", value: String(retryAfter)) }
        for (name, value) in extraHeaders { headers.add(name: name, value: value) }
        return LocalResponse(
            status: error.status, headers: headers, body: error.problemJSON(requestID: requestID), error: error)
    }

    /// The problem of `error` as a small HTML page (the sign-in endpoints, for browsers): the
    /// same title and detail, HTML-escaped, and nothing else a client or provider sent.
    static func htmlPage(_ error: GatewayError, requestID: String) -> LocalResponse {
        var response = LocalResponse.problem(error, requestID: requestID)
        response.headers.replaceOrAdd(name: "Content-Type", value: "text/html; charset=utf-8")
        response.headers.add(name: "Content-Security-Policy", value: "default-src 'none'")
        let title = HTML.escape(error.status.reasonPhrase)
        response.body = """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>\(title)</title></head>
            <body><h1>\(title)</h1><p>\(HTML.escape(error.detail))</p>
            <p><small>Request \(HTML.escape(requestID))</small></p></body></html>

            """
        return response
    }

    /// `302 Found` to `location` (docs/browser-sign-in.md), never cached.
    static func redirect(to location: String, headers extra: HeaderFields = []) -> LocalResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Location", value: location)
        headers.add(name: "Cache-Control", value: "no-store")
        for (name, value) in extra { headers.add(name: name, value: value) }
        return LocalResponse(status: .found, headers: headers, body: "", error: nil)
    }

    static func json(_ status: HTTPResponseStatus, _ document: JSONValue) -> LocalResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        return LocalResponse(status: status, headers: headers, body: document.jsonText, error: nil)
    }

    static func text(
        _ status: HTTPResponseStatus, _ text: String, contentType: String = "text/plain; charset=utf-8"
    ) -> LocalResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Cache-Control", value: "no-store")
        return LocalResponse(status: status, headers: headers, body: text, error: nil)
    }
}
