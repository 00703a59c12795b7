import NIOHTTP1

/// The header rules of one configuration snapshot, prepared once. A class: every forwarded
/// request's `HeaderRewrite` holds it until its backend head is written (one reference, not a
/// copy of each list).
package final class ForwardingPolicy: Sendable {
    let identityHeaders: [IdentityHeader]
    /// Lower-cased names of `identityHeaders` and of the assertion header: removed from every
    /// inbound request.
    let strippedNames: [String]
    /// The same names as configured: an authorizer's allow answer carries each, empty when the
    /// request has no value for it (docs/authorizer.md, "Answers").
    let answeredNames: [String]
    /// Lower-cased `stripInboundHeaderPrefixes`.
    let strippedPrefixes: [String]
    let trustedProxies: [CIDR]
    /// With `browserSignIn`: the session cookie's name and the flow cookies' prefix, removed
    /// from every forwarded `Cookie` (docs/browser-sign-in.md).
    let signInCookies: (session: String, flowPrefix: String)?

    package init(configuration: GatewayConfiguration) {
        self.identityHeaders = configuration.identityHeaders
        // A client's own assertion is never one the gateway signed (docs/assertions.md).
        self.answeredNames =
            configuration.identityHeaders.map(\.name) + (configuration.identityAssertion.map { [$0.header] } ?? [])
        self.strippedNames = self.answeredNames.map { $0.lowercased() }
        self.strippedPrefixes = configuration.stripInboundHeaderPrefixes.map { $0.lowercased() }
        self.trustedProxies = configuration.trustedProxies
        self.signInCookies = configuration.browserSignIn.map { ($0.sessionCookieName, $0.flowCookiePrefix) }
    }
}

/// Where a token was found, so a replacement can be put back in the same place.
public enum TokenLocation: Sendable, Equatable {
    /// A header; `bearer` tells whether the value had the `Bearer ` scheme.
    case header(name: String, bearer: Bool)
    case cookie(name: String)
    /// The access token of the browser session under this handle digest
    /// (docs/browser-sign-in.md): forwarded as `Authorization: Bearer`, never as the cookie.
    case session(TokenDigest)
    /// An entry of `Sec-WebSocket-Protocol` starting with `prefix` (docs/streams.md): removed
    /// from what the backend receives, never replaced.
    case websocketProtocol(prefix: String)

    var isSession: Bool {
        if case .session = self { return true }
        return false
    }
}

/// A change to a token on its way to the backend: removed (`forwardAccessToken: false`, and
/// refresh tokens always), or replaced by the refreshed access token in the place the old one
/// came from (docs/authentication.md).
package struct TokenEdit: Equatable {
    var location: TokenLocation
    /// nil removes the token. For a session's token: the whole `Authorization` value
    /// (`Bearer <token>`).
    var replacement: String?
}

/// Rewrites request headers on their way to the backend: hop-by-hop removal (RFC 9110 §7.6.1),
/// stripping of client-supplied identity headers, `X-Forwarded-*`, `X-Request-Id`, verified
/// identity headers, and the access token's fate. (Response heads: `HTTPWriter`.)
package enum HeaderRewriter {
    /// Headers that describe one connection, never forwarded (plus those named in `Connection`).
    /// `Expect` is answered by the gateway itself; framing headers are set from the body.
    /// `HTTP2-Settings` belongs to an `Upgrade: h2c` the gateway ignores (RFC 9113 §3.2 made
    /// it connection-specific), also when the client forgot to name it in `Connection`.
    private static let hopByHop: [String] = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authorization", "proxy-authenticate", "expect", "http2-settings",
    ]

    /// The rewritten fields as a header list (an HTTP/2 backend's head, tests).
    package static func upstreamRequestHeaders(
        _ headers: HTTPHeaders,
        framing: BodyFraming,
        policy: ForwardingPolicy,
        connection: ClientConnectionInfo,
        requestID: String,
        identity: HeaderFields,
        tokenEdits: [TokenEdit],
        traceContext: HeaderFields = [],
        stripDPoPProof: Bool = false
    ) -> HTTPHeaders {
        Self.upstreamRequestHeaders(
            headers,
            HeaderRewrite(
                framing: framing, policy: policy, connection: connection, requestID: requestID, identity: identity,
                tokenEdits: tokenEdits, traceContext: traceContext, stripDPoPProof: stripDPoPProof,
                forwardedHost: headers.first(name: "host").flatMap { try? CanonicalHost.make($0[...]).name }))
    }

    static func upstreamRequestHeaders(_ headers: HTTPHeaders, _ rewrite: HeaderRewrite) -> HTTPHeaders {
        var list = FieldList(capacity: headers.count + rewrite.identity.count + 8)
        Self.rewrite(headers, rewrite, into: &list)
        // Wrapped once (`HTTPHeaders.add` re-validates each name: measured). Every name here
        // was checked where it entered: by the request parser or the configuration loader.
        return HTTPHeaders(list.fields)
    }

    /// The one place the rules above are applied: the client's `headers`, changed by `rewrite`,
    /// handed to `sink` in order — a header list, or an HTTP/1.1 backend's head written in one
    /// pass (`HTTPWriter.requestHead`).
    static func rewrite<Sink: HeaderFieldSink>(_ headers: HTTPHeaders, _ rewrite: HeaderRewrite, into sink: inout Sink)
    {
        let policy = rewrite.policy
        let connection = rewrite.connection
        let tokenEdits = rewrite.tokenEdits
        let connectionTokens = Self.connectionTokens(headers)
        var forwardedFor: String?
        var forwardedProto: String?
        var forwardedHost: String?
        for (name, value) in headers {
            if Self.isHopByHop(name, connectionTokens: connectionTokens) { continue }
            if Self.isStrippedIdentityHeader(name, policy: policy) { continue }
            // The proof is for the gateway (docs/authentication.md), unless the route forwards it.
            if rewrite.stripDPoPProof && ASCII.equalsIgnoringCase(name, "dpop") { continue }
            if ASCII.equalsIgnoringCase(name, "host") {
                // Replaced below when it was not spelled canonically (or by an absolute-form
                // target's authority).
                if rewrite.host != nil { continue }
            } else if ASCII.equalsIgnoringCase(name, "x-forwarded-for") {
                if connection.peerIsTrustedProxy { forwardedFor = forwardedFor.map { "\($0), \(value)" } ?? value }
                continue
            } else if ASCII.equalsIgnoringCase(name, "x-forwarded-proto") {
                if connection.peerIsTrustedProxy, forwardedProto == nil { forwardedProto = value }
                continue
            } else if ASCII.equalsIgnoringCase(name, "x-forwarded-host") {
                if connection.peerIsTrustedProxy, forwardedHost == nil { forwardedHost = value }
                continue
            } else if ASCII.equalsIgnoringCase(name, "x-request-id") {
                continue
            } else if rewrite.authorization != nil, ASCII.equalsIgnoringCase(name, "authorization") {
                // Replaced below.
                continue
            } else if !rewrite.traceContext.isEmpty,
                ASCII.equalsIgnoringCase(name, "traceparent") || ASCII.equalsIgnoringCase(name, "tracestate")
            {
                // Replaced by the gateway's own span context below.
                continue
            }
            var value = value
            if let signIn = policy.signInCookies, ASCII.equalsIgnoringCase(name, "cookie") {
                guard let kept = CookieHeader.removing(value, name: signIn.session, prefix: signIn.flowPrefix) else {
                    continue
                }
                value = kept
            }
            if tokenEdits.isEmpty {
                sink.appendField(name, value)
            } else {
                Self.addApplying(tokenEdits, name: name, value: value, to: &sink)
            }
        }
        for edit in tokenEdits {
            // A session's access token goes to the backend as a bearer token, never the cookie
            // (the edit holds the whole `Bearer …` value).
            if case .session = edit.location, let authorization = edit.replacement {
                sink.appendField("Authorization", authorization)
            }
        }
        sink.appendField("X-Forwarded-For", forwardedFor.map { "\($0), \(connection.peerIP)" } ?? connection.peerIP)
        sink.appendField("X-Forwarded-Proto", forwardedProto ?? (connection.isTLS ? "https" : "http"))
        // A trusted proxy's own, else the canonical host without its port (docs/forwarding.md).
        if let forwardedHost = forwardedHost ?? rewrite.forwardedHost.map(String.init) {
            sink.appendField("X-Forwarded-Host", forwardedHost)
        }
        sink.appendField("X-Request-Id", rewrite.requestID)
        if let authorization = rewrite.authorization { sink.appendField("Authorization", authorization) }
        for field in rewrite.identity { sink.appendField(field.name, field.value) }
        for field in rewrite.traceContext { sink.appendField(field.name, field.value) }
        if rewrite.framing == .chunked { sink.appendField("Transfer-Encoding", "chunked") }
        // The backend sees the host the request was routed by: an absolute-form target's
        // authority replaces Host (RFC 9112 §3.2.2), and so does the canonical spelling of a
        // Host that was not canonical (`Admin.Example.com.` → `admin.example.com`).
        if let authority = rewrite.host { sink.appendField("Host", authority) }
        if let upgrade = rewrite.upgrade {
            // Hop-by-hop, so removed above; an upgrade asks the backend for them again.
            sink.appendField("Connection", "upgrade")
            sink.appendField("Upgrade", upgrade)
        }
    }

    private static func connectionTokens(_ headers: HTTPHeaders) -> [Substring] {
        var tokens: [Substring] = []
        for (name, value) in headers where ASCII.equalsIgnoringCase(name, "connection") {
            for token in value.split(separator: ",") {
                let trimmed = ASCII.trimmingOWS(token)
                if !trimmed.isEmpty { tokens.append(trimmed) }
            }
        }
        return tokens
    }

    @inline(__always)
    private static func isHopByHop(_ name: String, connectionTokens: [Substring]) -> Bool {
        for hop in Self.hopByHop where ASCII.equalsIgnoringCase(name, hop) { return true }
        for token in connectionTokens where ASCII.equalsIgnoringCase(name, token) { return true }
        return false
    }

    @inline(__always)
    static func isStrippedIdentityHeader(_ name: String, policy: ForwardingPolicy) -> Bool {
        for stripped in policy.strippedNames where ASCII.equalsIgnoringCase(name, stripped) { return true }
        for prefix in policy.strippedPrefixes where ASCII.hasPrefixIgnoringCase(name, prefix) { return true }
        return false
    }

    /// Adds one header after applying the token edits that concern it.
    private static func addApplying<Sink: HeaderFieldSink>(
        _ edits: [TokenEdit], name: String, value: String, to sink: inout Sink
    ) {
        var value = value
        for edit in edits {
            switch edit.location {
            case .header(let tokenHeader, let bearer):
                guard ASCII.equalsIgnoringCase(name, tokenHeader) else { continue }
                guard let replacement = edit.replacement else { return }
                value = bearer ? "Bearer \(replacement)" : replacement
            case .session:
                // The client's own `Authorization` (not a token, or it would have won) gives way
                // to the session's access token.
                guard ASCII.equalsIgnoringCase(name, "authorization") else { continue }
                return
            case .cookie(let cookieName):
                guard ASCII.equalsIgnoringCase(name, "cookie") else { continue }
                guard let rewritten = CookieHeader.rewrite(value, name: cookieName, replacement: edit.replacement)
                else { return }
                value = rewritten
            case .websocketProtocol(let prefix):
                guard ASCII.equalsIgnoringCase(name, "sec-websocket-protocol") else { continue }
                guard let rest = Self.removingProtocols(value, prefix: prefix) else { return }
                value = rest
            }
        }
        sink.appendField(name, value)
    }

    /// `Sec-WebSocket-Protocol` without its entries that start with `prefix` (a token source's):
    /// nil when none is left.
    static func removingProtocols(_ value: String, prefix: String) -> String? {
        let kept = value.split(separator: ",").map { ASCII.trimmingOWS($0) }.filter {
            !$0.isEmpty && !$0.hasPrefix(prefix)
        }
        return kept.isEmpty ? nil : kept.joined(separator: ", ")
    }
}

/// Where `HeaderRewriter.rewrite` puts the fields it keeps and adds, in order.
protocol HeaderFieldSink {
    mutating func appendField(_ name: String, _ value: String)
}

/// A header list being built, to be wrapped once as `HTTPHeaders`.
struct FieldList: HeaderFieldSink {
    private(set) var fields: [(String, String)] = []

    init(capacity: Int) { self.fields.reserveCapacity(capacity) }

    mutating func appendField(_ name: String, _ value: String) { self.fields.append((name, value)) }
}

/// What the gateway changes in a request's fields on their way to its backend (RequestPlanner
/// decides it; `HeaderRewriter.rewrite` applies it when the backend's head is written).
package struct HeaderRewrite {
    var framing: BodyFraming
    var policy: ForwardingPolicy
    var connection: ClientConnectionInfo
    var requestID: String
    /// Verified identity headers, added after the client's fields.
    var identity: HeaderFields
    var tokenEdits: [TokenEdit]
    /// The upstream span's context (`traceparent`, `tracestate`), replacing the client's.
    var traceContext: HeaderFields = []
    var stripDPoPProof = false
    /// The `Authorization` in place of whatever the client sent (an exchanged token); nil keeps
    /// the client's, as the token edits leave it.
    var authorization: String? = nil
    /// The canonical `Host` in place of the client's (`RequestTarget.backendHost`); nil keeps it.
    var host: String? = nil
    /// The canonical host without its port: `X-Forwarded-Host` unless a trusted proxy sent one.
    var forwardedHost: Substring? = nil
    /// A WebSocket upgrade's protocol: `Connection: upgrade` and `Upgrade` go to the backend.
    var upgrade: String? = nil
}
