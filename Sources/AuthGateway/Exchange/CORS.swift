import NIOHTTP1

/// CORS answered by the gateway for routes with `cors` (docs/policies.md, "CORS"): preflights
/// before authentication, and the `Access-Control-*` fields on every answer to an allowed origin,
/// the gateway's own errors included, so that a page can read a 401 or a 429. Pure functions of
/// the configuration and the request's fields.
enum CORS {
    /// A preflight's question (Fetch standard, "CORS-preflight request"): may a page of
    /// `origin` send `method` with `headers`?
    struct Preflight: Equatable {
        let origin: String
        let method: String
        /// `Access-Control-Request-Headers`, lower-cased, in the order sent.
        let headers: [Substring]

        /// nil unless the request is a preflight: `OPTIONS` with `Origin` and
        /// `Access-Control-Request-Method`. Anything else is an ordinary request.
        init?(method: HTTPMethod, headers: HTTPHeaders) {
            guard method == .OPTIONS, let origin = headers.first(name: "origin"),
                let requested = headers.first(name: "access-control-request-method")
            else { return nil }
            self.origin = origin
            self.method = requested
            self.headers = headers[canonicalForm: "access-control-request-headers"].map { $0.lowercased()[...] }
                .filter { !$0.isEmpty }
        }
    }

    /// The answer to a preflight on a route with `cors`: 204 with the `Access-Control-Allow-*`
    /// fields when the origin, the method and every requested header are allowed, else a 403
    /// problem without CORS fields (a refused preflight tells the page nothing).
    static func answer(_ preflight: Preflight, cors: CORSConfiguration, requestID: String) -> LocalResponse {
        guard Self.allows(cors, origin: preflight.origin) else {
            return Self.refusal("the origin is not allowed", requestID: requestID)
        }
        guard cors.allowMethods.contains(preflight.method) else {
            return Self.refusal(Self.methodRefusal(preflight.method), requestID: requestID)
        }
        if !cors.allowHeaders.contains("*"),
            let refused = preflight.headers.first(where: { !cors.allowHeaders.contains(String($0)) })
        {
            let header = HTTPToken.isValid(String(refused)) ? "the header \(refused)" : "a requested header"
            return Self.refusal("\(header) is not allowed", requestID: requestID)
        }
        var headers = HTTPHeaders()
        headers.add(name: "Access-Control-Allow-Origin", value: preflight.origin)
        headers.add(name: "Access-Control-Allow-Methods", value: cors.allowMethods.joined(separator: ", "))
        if !preflight.headers.isEmpty {
            // Echoed: they were each checked above, and `*` is not a wildcard with credentials.
            headers.add(name: "Access-Control-Allow-Headers", value: preflight.headers.joined(separator: ", "))
        }
        if cors.allowCredentials { headers.add(name: "Access-Control-Allow-Credentials", value: "true") }
        if let maxAge = cors.maxAgeSeconds { headers.add(name: "Access-Control-Max-Age", value: String(maxAge)) }
        headers.add(name: "Vary", value: Self.preflightVary)
        return LocalResponse(status: .noContent, headers: headers, body: "", error: nil)
    }

    /// What a preflight's answer depends on, granted or refused: a cache must not serve one
    /// origin's (or method's, or headers') answer to another.
    static let preflightVary = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"

    /// A refused preflight: 403 `cors.refused` saying what was refused, with `Vary` and no
    /// `Access-Control-*` field.
    static func refusal(_ detail: String, requestID: String) -> LocalResponse {
        var response = LocalResponse.problem(.corsRefused(detail), requestID: requestID)
        response.headers.add(name: "Vary", value: Self.preflightVary)
        return response
    }

    /// Whether `origin` is one of the route's: never the opaque origin `null` (sandboxed frames,
    /// `file:` pages, redirects across origins all send it, so it names no one), not even with
    /// `*`.
    static func allows(_ cors: CORSConfiguration, origin: String) -> Bool {
        origin != "null" && cors.allows(origin: origin)
    }

    /// What a refusal for `method` says: the method when it is a token, else nothing of it.
    static func methodRefusal(_ method: String) -> String {
        HTTPToken.isValid(method) ? "the method \(method) is not allowed" : "the method is not allowed"
    }

    /// The fields for an actual answer on a route with `cors`: `Vary: Origin` always (the answer
    /// depends on it, for caches), and for an allowed `origin` the origin itself (never `*`),
    /// credentials and exposed headers. A disallowed or absent origin gets no CORS fields.
    static func responseHeaders(_ cors: CORSConfiguration, origin: String?) -> HeaderFields {
        guard let origin, Self.allows(cors, origin: origin) else { return [("Vary", "Origin")] }
        var headers: HeaderFields = [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
        if cors.allowCredentials { headers.append(("Access-Control-Allow-Credentials", "true")) }
        if !cors.exposeHeaders.isEmpty {
            headers.append(("Access-Control-Expose-Headers", cors.exposeHeaders.joined(separator: ", ")))
        }
        return headers
    }
}
