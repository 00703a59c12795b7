import NIOHTTP1

/// The HTTP contracts' answers to a decision (docs/authorizer.md).
extension AuthorizerEndpoints {
    /// The caller's answer to `decision` under `contract`, counted under `mode="authorizer"`
    /// and the original request's route.
    func answer(_ decision: AccessDecision, contract: AuthorizerContract) -> RequestPlan {
        switch decision {
        case .allowed(let allowed):
            let names = self.planner.snapshot.forwarding.answeredNames
            return self.respond(Self.allowance(allowed, answering: names), route: allowed.route.name)
        case .denied(let response, let route):
            return self.deny(response, route: route, contract: contract)
        case .preflight(let response, let route):
            // A granted preflight is allowed without a token: 200 with its `Access-Control-*`
            // fields for the proxy to pass on; a refused one is a denial (docs/authorizer.md).
            guard response.status == .noContent else { return self.deny(response, route: route, contract: contract) }
            let names = self.planner.snapshot.forwarding.answeredNames
            return self.respond(Self.preflightAllowance(response, answering: names), route: route)
        }
    }

    func deny(_ response: LocalResponse, route: String?, contract: AuthorizerContract) -> RequestPlan {
        switch contract {
        case .authRequest: return self.respond(Self.forNginx(response), route: route)
        case .forwardAuth, .extAuthz: return self.respond(response, route: route)
        }
    }

    /// The allow answer to a granted CORS preflight: 200 with the preflight's fields (and every
    /// identity header and the assertion header empty: no identity).
    static func preflightAllowance(_ preflight: LocalResponse, answering names: [String]) -> LocalResponse {
        var headers = preflight.headers
        headers.add(name: "Cache-Control", value: "no-store")
        for name in names { headers.add(name: name, value: "") }
        return LocalResponse(status: .ok, headers: headers, body: "", error: nil)
    }

    /// 200 with what the proxy copies: the identity headers and the access token the backend
    /// gets (the refreshed one after a refresh, a session's as `Authorization: Bearer`) for the
    /// upstream request, the response headers (new tokens, `Set-Cookie`, `RateLimit`) for the
    /// client.
    ///
    /// Every configured identity header, and the assertion header when `identityAssertion` is
    /// configured (`names`, `ForwardingPolicy.answeredNames`), is answered, empty when the
    /// request has no value for it (an anonymous allow, a claim the token lacks, a route that
    /// signs no assertion): a proxy that copies a header only when the answer carries it leaves
    /// the client's own in place otherwise (Caddy's `copy_headers`, caddyserver/caddy#6608;
    /// Caddy 2.6 its unexpanded placeholder; Envoy's `allowed_upstream_headers`), and an empty
    /// answer makes every copy overwrite it (docs/authorizer.md, "Answers").
    static func allowance(_ allowed: AllowedRequest, answering names: [String]) -> LocalResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Cache-Control", value: "no-store")
        for (name, value) in allowed.identityHeaders { headers.add(name: name, value: value) }
        for name in names where !allowed.identityHeaders.contains(where: { ASCII.equalsIgnoringCase($0.name, name) }) {
            headers.add(name: name, value: "")
        }
        for (name, value) in Self.upstreamTokenHeaders(allowed.tokenEdits) { headers.add(name: name, value: value) }
        if let authorization = allowed.backendAuthorization {
            headers.replaceOrAdd(name: "Authorization", value: authorization)
        }
        for (name, value) in allowed.responseHeaders { headers.add(name: name, value: value) }
        return LocalResponse(status: .ok, headers: headers, body: "", error: nil)
    }

    /// The access token as the backend gets it when it is not the one the client sent: a
    /// refresh's new token, a session's token (`Authorization: Bearer`).
    static func upstreamTokenHeaders(_ edits: [TokenEdit]) -> HeaderFields {
        var headers: HeaderFields = []
        for edit in edits {
            guard let replacement = edit.replacement else { continue }
            switch edit.location {
            case .header(let name, let bearer): headers.append((name, bearer ? "Bearer \(replacement)" : replacement))
            // A session's edit holds the whole `Authorization` value.
            case .session: headers.append(("Authorization", replacement))
            case .cookie, .websocketProtocol: continue
            }
        }
        return headers
    }

    /// nginx passes on only 401 and 403 (any other status is its own 500): a redirect to sign
    /// in becomes 401 with its `Location`; any other refusal 403 with the real status in
    /// `X-Auth-Gateway-Status` (its `Retry-After` kept). A 2xx (a granted CORS preflight) is an
    /// allow for nginx and goes as it is.
    static func forNginx(_ response: LocalResponse) -> LocalResponse {
        var response = response
        switch response.status.code {
        case 200..<300, 401, 403:
            break
        case 301, 302, 303, 307, 308:
            // A 401 like any other carries its challenge (RFC 9110 §15.5.2), beside `Location`.
            response.status = .unauthorized
            response.headers.replaceOrAdd(name: "WWW-Authenticate", value: "Bearer realm=\"auth-gateway\"")
        default:
            response.headers.add(name: "X-Auth-Gateway-Status", value: String(response.status.code))
            response.status = .forbidden
        }
        return response
    }
}
