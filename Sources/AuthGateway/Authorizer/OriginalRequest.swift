import NIOCore
import NIOHTTP1

/// The HTTP contracts of authorizer mode (docs/authorizer.md), by the name after `pathPrefix`.
enum AuthorizerContract: Sendable, Equatable {
    /// nginx `auth_request`, ingress-nginx `auth-url`: the original in `X-Original-*`; every
    /// refusal is a 401 or a 403, which is all nginx passes on.
    case authRequest
    /// Traefik ForwardAuth, Caddy `forward_auth`, HAProxy, Skipper: the original in
    /// `X-Forwarded-*`; a refusal is the client's exact answer.
    case forwardAuth
    /// Envoy's HTTP `ext_authz` (`path_prefix`): the caller's own method, headers and path.
    case extAuthz

    static let extAuthzName = "ext-authz"

    /// The contract whose endpoint `name` (the path after the prefix) is, if any.
    static func named(_ name: Substring) -> AuthorizerContract? {
        if name == "auth-request" { return .authRequest }
        if name == "forward-auth" { return .forwardAuth }
        if name.hasPrefix(Self.extAuthzName) {
            let rest = name.dropFirst(Self.extAuthzName.count)
            if rest.isEmpty || rest.first == "/" { return .extAuthz }
        }
        return nil
    }
}

/// The request another proxy asks about, rebuilt from what it sends (docs/authorizer.md): what
/// the gateway decides instead of the call itself. Pure: no I/O, nothing looked up.
struct OriginalRequest: Equatable {
    var method: HTTPMethod
    /// "http" or "https".
    var scheme: String
    /// As the client sent it (with a port, if any); nil when the caller named none.
    var host: String?
    /// Origin-form: the path and the query.
    var uri: String
    /// The caller's headers without its framing and contract headers, `Host` set to `host`.
    var headers: HTTPHeaders
    /// The client's address, for `client.ip` and rate-limit keys.
    var clientIP: String

    var isTLS: Bool { self.scheme == "https" }
}

/// Why a call cannot be decided: answered 400, naming the header.
struct AuthorizerCallError: Error, Equatable, CustomStringConvertible {
    let description: String

    static func missing(_ header: String) -> AuthorizerCallError {
        AuthorizerCallError(description: "The authorizer call lacks the \(header) header its contract needs")
    }

    static func invalid(_ header: String) -> AuthorizerCallError {
        AuthorizerCallError(description: "The authorizer call's \(header) header is not a valid value")
    }
}

extension OriginalRequest {
    /// The caller's headers that describe the original request, never part of it.
    static let contractHeaders: Set<String> = [
        "x-original-method", "x-original-uri", "x-original-url", "x-forwarded-method", "x-forwarded-uri",
        "x-forwarded-host", "x-forwarded-proto", "x-forwarded-for", "x-real-ip",
    ]

    /// The caller's own framing and connection headers: its call's, never the original's.
    static let callerFraming: Set<String> = [
        "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "te", "trailer",
        "upgrade", "expect", "http2-settings",
    ]

    /// Rebuilds the original request from a call under `contract`. `uri`: the call's target;
    /// `extAuthzPrefix`: the path before the original one on an `ext-authz` call
    /// (`<pathPrefix>ext-authz`); `peerIP`: the caller's address (the client's when the call
    /// names none).
    static func rebuild(
        _ contract: AuthorizerContract, method: HTTPMethod, uri: String, headers: HTTPHeaders, extAuthzPrefix: String,
        peerIP: String
    ) -> Result<OriginalRequest, AuthorizerCallError> {
        let originalMethod: HTTPMethod
        var scheme = Self.first("x-forwarded-proto", headers).map { $0.lowercased() } ?? "http"
        var host = Self.first("x-forwarded-host", headers) ?? Self.first("host", headers)
        var target: String
        var clientIP = Self.lastForwardedFor(headers) ?? Self.first("x-real-ip", headers) ?? peerIP
        switch contract {
        case .authRequest:
            guard let text = Self.first("x-original-method", headers) else {
                return .failure(.missing("X-Original-Method"))
            }
            guard let parsed = Self.method(text) else { return .failure(.invalid("X-Original-Method")) }
            originalMethod = parsed
            if let uri = Self.first("x-original-uri", headers) {
                guard uri.hasPrefix("/") else { return .failure(.invalid("X-Original-URI")) }
                target = uri
            } else if let url = Self.first("x-original-url", headers) {
                guard let parts = Self.splitURL(url) else { return .failure(.invalid("X-Original-URL")) }
                (scheme, host, target) = (parts.scheme, parts.authority, parts.target)
            } else {
                return .failure(.missing("X-Original-URI"))
            }
            // nginx knows the client's address first-hand: `X-Real-IP $remote_addr`.
            clientIP = Self.first("x-real-ip", headers) ?? Self.lastForwardedFor(headers) ?? peerIP
        case .forwardAuth:
            guard let text = Self.first("x-forwarded-method", headers) else {
                return .failure(.missing("X-Forwarded-Method"))
            }
            guard let parsed = Self.method(text) else { return .failure(.invalid("X-Forwarded-Method")) }
            originalMethod = parsed
            guard let uri = Self.first("x-forwarded-uri", headers) else { return .failure(.missing("X-Forwarded-Uri")) }
            guard uri.hasPrefix("/") else { return .failure(.invalid("X-Forwarded-Uri")) }
            target = uri
        case .extAuthz:
            originalMethod = method
            guard uri.hasPrefix(extAuthzPrefix) else { return .failure(.invalid(":path")) }
            target = String(uri.dropFirst(extAuthzPrefix.count))
            if !target.hasPrefix("/") { target = "/" + target }
            // Envoy names the original host in `Host` (`:authority`), never in X-Forwarded-Host.
            host = Self.first("host", headers)
        }
        guard scheme == "http" || scheme == "https" else { return .failure(.invalid("X-Forwarded-Proto")) }
        // The host is made canonical, or refused as ambiguous, with the path (`RequestTarget`).
        if let address = try? SocketAddress(ipAddress: clientIP, port: 0), let normalized = address.ipAddress {
            clientIP = normalized
        }
        return .success(
            OriginalRequest(
                method: originalMethod, scheme: scheme, host: host, uri: target,
                headers: Self.originalHeaders(headers, host: host), clientIP: clientIP))
    }

    /// The caller's headers minus its framing, the contract's headers and those `Connection`
    /// names; `Host` is the original's.
    static func originalHeaders(_ headers: HTTPHeaders, host: String?) -> HTTPHeaders {
        let named = Set(headers[canonicalForm: "connection"].map { $0.lowercased() })
        var output: [(String, String)] = []
        output.reserveCapacity(headers.count)
        if let host { output.append(("Host", host)) }
        for (name, value) in headers {
            let lower = name.lowercased()
            if lower == "host" || Self.callerFraming.contains(lower) || Self.contractHeaders.contains(lower)
                || named.contains(lower)
            {
                continue
            }
            output.append((name, value))
        }
        return HTTPHeaders(output)
    }

    /// The first value of `name`, trimmed; nil when absent or empty.
    static func first(_ name: String, _ headers: HTTPHeaders) -> String? {
        guard let value = headers.first(name: name) else { return nil }
        let trimmed = value.trimmingASCIISpaces
        return trimmed.isEmpty ? nil : trimmed
    }

    /// The last `X-Forwarded-For` hop: the address the caller itself saw (nginx
    /// `$proxy_add_x_forwarded_for`, Envoy and Traefik append it; Caddy sets it). Hops left of
    /// it were written by the client and are not believed.
    static func lastForwardedFor(_ headers: HTTPHeaders) -> String? {
        headers[canonicalForm: "x-forwarded-for"].last { !$0.isEmpty }.map { String($0) }
    }

    static func method(_ text: String) -> HTTPMethod? {
        guard !text.isEmpty, HTTPToken.isValid(text) else { return nil }
        return HTTPMethod(rawValue: text.uppercased())
    }

    /// `scheme://authority/target` of ingress-nginx's `X-Original-URL`.
    static func splitURL(_ url: String) -> (scheme: String, authority: String, target: String)? {
        guard let range = url.range(of: "://") else { return nil }
        let scheme = url[..<range.lowerBound].lowercased()
        let rest = url[range.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = String(rest[..<end])
        guard !authority.isEmpty, Self.isAuthority(authority) else { return nil }
        var target = String(rest[end...])
        if !target.hasPrefix("/") { target = "/" + target }
        return (scheme, authority, target)
    }

    /// A host with an optional port, without user info or whitespace.
    static func isAuthority(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "@") && $0 != UInt8(ascii: "/") }
    }
}

extension String {
    fileprivate var trimmingASCIISpaces: String {
        var view = Substring(self)
        while view.first == " " || view.first == "\t" { view = view.dropFirst() }
        while view.last == " " || view.last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
