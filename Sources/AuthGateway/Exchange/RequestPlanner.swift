import NIOCore
import NIOHTTP1
import Tracing

/// What to do with a request whose head has arrived.
enum RequestPlan {
    /// Answer locally; close the connection afterwards when `close`. `route`: the matched
    /// route's name, for the metrics and the access log (nil when none matched).
    case respond(LocalResponse, close: Bool, route: String? = nil)
    case forward(ForwardPlan)
}

/// An authorized request, ready to go to its backend. A class: the handler reads it at every
/// step of the request, and as a struct each read copied (retained and released) all its
/// fields (measured: ~1 % of a proxied request's CPU).
final class ForwardPlan {
    let route: RouteConfiguration
    let pool: UpstreamPool
    let head: HTTPRequestHead
    let responseTimeout: TimeAmount
    /// Added to the client's response (new tokens after a refresh).
    let responseHeaders: [(name: String, value: String)]
    /// The verified subject, for the access log.
    let subject: String?
    /// The protocol a WebSocket upgrade asks for ("websocket"); nil for ordinary requests.
    let upgrade: String?
    /// The upstream call's span when the request is traced (its context went upstream).
    let upstreamSpan: (any Span)?
    /// Fields encoded never-indexed towards an HTTP/2 backend and an HTTP/2 client.
    let secretHeaders: SecretHeaderNames

    init(
        route: RouteConfiguration, pool: UpstreamPool, head: HTTPRequestHead, responseTimeout: TimeAmount,
        responseHeaders: [(name: String, value: String)], subject: String?, upgrade: String?,
        upstreamSpan: (any Span)? = nil,
        secretHeaders: SecretHeaderNames = SecretHeaderNames()
    ) {
        self.secretHeaders = secretHeaders
        self.route = route
        self.pool = pool
        self.head = head
        self.responseTimeout = responseTimeout
        self.responseHeaders = responseHeaders
        self.subject = subject
        self.upgrade = upgrade
        self.upstreamSpan = upstreamSpan
    }
}

enum PlanDecision {
    case ready(RequestPlan)
    /// Waiting on the auth service or a key refetch for a request on `route` (nil: the gateway's
    /// own endpoints).
    case pending(EventLoopFuture<RequestPlan>, route: String?)
}

/// Turns a request head into a plan (Pingora's request phases, in order): normalize the
/// target → health endpoints → route → authenticate → rewrite headers. Transport-free; the
/// `ProxyHandler` runs the plan.
struct RequestPlanner {
    let environment: any ExchangeEnvironment
    let snapshot: RuntimeSnapshot
    let connection: ClientConnectionInfo

    func plan(
        head: HTTPRequestHead, framing: BodyFraming, requestID: String, now: Double, trace: RequestTrace? = nil
    ) -> PlanDecision {
        let target: RequestTarget
        do {
            target = try RequestTarget(parsing: head.uri)
        } catch {
            return .ready(.respond(.problem(.invalidPath, requestID: requestID), close: false))
        }
        if let health = self.environment.healthResponse(path: target.path, method: head.method) {
            return .ready(.respond(health, close: false))
        }
        if let signIn = self.snapshot.browserSignIn,
            let decision = SignInEndpoints(signIn: signIn, environment: self.environment, requestID: requestID).plan(
                target, head: head, now: now)
        {
            return decision
        }
        var upgrade: String?
        // WebSocket is tunnelled once authorized. Any other upgrade (`h2c`, which `curl --http2`
        // and Java's HttpClient send on http:// URLs) is ignored, as RFC 9110 §7.8 allows: the
        // request is served over HTTP/1.1, and `Upgrade`, `HTTP2-Settings` and the `Connection`
        // tokens naming them are hop-by-hop, never forwarded (SPEC §4.9).
        if RequestFraming.isUpgrade(head), let protocolName = RequestFraming.webSocketUpgrade(head) {
            guard head.method == .GET, head.version == .http1_1, framing == .none else {
                return .ready(
                    .respond(
                        .problem(
                            .malformedRequest("A WebSocket upgrade is an HTTP/1.1 GET without a body"),
                            requestID: requestID), close: true))
            }
            upgrade = protocolName
        }
        let host =
            target.authority.map(RouteTable.hostWithoutPort)
            ?? head.headers.first(name: "host").map { RouteTable.hostWithoutPort($0[...]) }
        guard let resolved = self.snapshot.routes.match(host: host, path: target.path, method: head.method.rawValue)
        else {
            return .ready(.respond(.problem(.routeNotFound, requestID: requestID), close: false))
        }
        let route = resolved.configuration
        let backend = self.snapshot.backend(of: resolved)
        let pool = self.environment.pool(for: backend)
        let request = AuthRequest(
            headers: head.headers, route: route, keys: self.environment.keys, now: now, connection: self.connection,
            trustedProxies: self.snapshot.forwarding.trustedProxies, method: head.method, uri: head.uri, trace: trace
        )
        let decision = self.environment.authenticator.authenticate(request)
        switch decision {
        case .done(let outcome):
            return .ready(
                self.finish(
                    outcome, request: request, head: head, framing: framing, target: target, backend: backend,
                    pool: pool,
                    requestID: requestID, upgrade: upgrade))
        case .pending(let future):
            let planner = self
            return .pending(
                future.assumeIsolated().map { outcome in
                    planner.finish(
                        outcome, request: request, head: head, framing: framing, target: target, backend: backend,
                        pool: pool,
                        requestID: requestID, upgrade: upgrade)
                }.nonisolated(),
                route: route.name
            )
        }
    }

    private func finish(
        _ outcome: AuthOutcome,
        request: AuthRequest,
        head: HTTPRequestHead,
        framing: BodyFraming,
        target: RequestTarget,
        backend: ResolvedBackend,
        pool: UpstreamPool,
        requestID: String,
        upgrade: String?
    ) -> RequestPlan {
        let route = request.route
        var identity: Identity?
        switch outcome {
        case .rejected(let error, let headers):
            return .respond(
                .problem(error, requestID: requestID, extraHeaders: headers), close: false, route: route.name)
        case .redirect(let location, let headers):
            return .respond(.redirect(to: location, headers: headers), close: false, route: route.name)
        case .anonymous:
            identity = nil
        case .authenticated(let authenticated):
            identity = authenticated
        }
        let fields = IdentityFields(identity: identity, request: request)
        // Rate limits (docs/rate-limits.md): after authentication, before anything goes upstream.
        var responseHeaders = identity?.responseHeaders ?? []
        if let limiter = self.snapshot.rateLimiter, let tables = limiter.tables(forRoute: route.name) {
            switch limiter.check(
                tables, route: route.name, fields: fields, now: NIODeadline.now().uptimeNanoseconds,
                memo: self.environment.rateLimitKeys)
            {
            case .admitted(let header):
                if let header { responseHeaders.append(("RateLimit", header)) }
            case .refused(let limit, let retryAfter, let headers):
                let error = GatewayError.rateLimited(limit, retryAfterSeconds: retryAfter)
                // A refresh already rotated the client's tokens: the refusal carries them.
                return .respond(
                    .problem(error, requestID: requestID, extraHeaders: responseHeaders + headers), close: false,
                    route: route.name)
            }
        }
        var edits = self.snapshot.refreshTokenRemovals
        var identityHeaders: [(name: String, value: String)] = []
        if let identity {
            if !route.forwardAccessToken {
                edits.append(TokenEdit(location: identity.accessToken.location, replacement: nil))
            } else if let replacement = identity.replacementAccessToken {
                edits.append(TokenEdit(location: identity.accessToken.location, replacement: replacement))
            } else if case .session = identity.accessToken.location {
                // A session's token reaches the backend as `Authorization: Bearer`.
                edits.append(
                    TokenEdit(location: identity.accessToken.location, replacement: identity.currentAccessToken))
            }
            identityHeaders = Self.identityHeaders(fields, policy: self.snapshot.forwarding)
        }
        // A traced request's backend sees the upstream span as its parent.
        let trace = request.trace
        let upstreamSpan = trace?.child("upstream \(route.backend)", kind: .client)
        var upstreamHeaders = HeaderRewriter.upstreamRequestHeaders(
            head.headers,
            framing: framing,
            policy: self.snapshot.forwarding,
            connection: self.connection,
            requestID: requestID,
            identity: identityHeaders,
            tokenEdits: edits,
            traceContext: upstreamSpan.map { trace!.propagationHeaders(for: $0) } ?? [],
            stripDPoPProof: !route.forwardDPoPProof
        )
        if let authority = target.authority {
            // RFC 9112 §3.2.2: an absolute-form target's authority replaces Host — the backend
            // must see the host the request was routed by, not another one from the client.
            upstreamHeaders.replaceOrAdd(name: "Host", value: String(authority))
        }
        if let upgrade {
            // Hop-by-hop, so removed above; an upgrade asks the backend for them again.
            upstreamHeaders.add(name: "Connection", value: "upgrade")
            upstreamHeaders.add(name: "Upgrade", value: upgrade)
        }
        let strip: String? =
            if route.stripPathPrefix, case .prefix(let prefix) = route.pathMatch { prefix } else { nil }
        let upstreamHead = HTTPRequestHead(
            version: .http1_1, method: head.method, uri: target.upstreamURI(strippingPrefix: strip),
            headers: upstreamHeaders)
        return .forward(
            ForwardPlan(
                route: route,
                pool: pool,
                head: upstreamHead,
                responseTimeout: backend.responseTimeout,
                responseHeaders: responseHeaders,
                subject: identity?.token.subject,
                upgrade: upgrade,
                upstreamSpan: upstreamSpan,
                secretHeaders: self.snapshot.secretHeaders
            )
        )
    }

    /// The identity headers (docs/configuration.md): each configured name with the value its
    /// path reads, in header form; names without a value are left out.
    static func identityHeaders(_ fields: IdentityFields, policy: ForwardingPolicy) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for header in policy.identityHeaders {
            if let value = fields.value(header.path), let text = IdentityLookup.headerText(for: value) {
                headers.append((header.name, text))
            }
        }
        return headers
    }
}
