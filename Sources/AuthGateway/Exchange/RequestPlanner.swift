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
    /// The matched route, by reference: a copy of its `RouteConfiguration` here cost a retain
    /// of each of its fields per request, and as many releases when the plan went.
    let resolved: ResolvedRoute
    var route: RouteConfiguration { self.resolved.configuration }
    /// The backend's pool on this loop; nil when the request goes to a `LocalEndpoint`.
    let pool: UpstreamPool?
    /// An endpoint of the gateway's own that reads the body (`LocalEndpoint`), instead of a backend.
    let local: LocalEndpoint?
    /// The backend's head, written when the lease sends it (`UpstreamRequestHead`).
    let head: UpstreamRequestHead
    let responseTimeout: TimeAmount
    /// Added to the client's response (new tokens after a refresh).
    let responseHeaders: HeaderFields
    /// The verified subject, for the access log.
    let subject: String?
    /// The API key's `id` when the caller presented one, for the access log.
    let apiKey: String?
    /// The protocol a WebSocket upgrade asks for ("websocket"); nil for ordinary requests.
    let upgrade: String?
    /// The upstream call's span when the request is traced (its context went upstream).
    let upstreamSpan: (any Span)?
    /// Fields encoded never-indexed towards an HTTP/2 backend and an HTTP/2 client.
    let secretHeaders: SecretHeaderNames
    // helper/streams hook (docs/streams.md): the decision, for a stream that outlives its
    // head — its credential's expiry, session and subject, and a reload's `require`.
    let allowed: AllowedRequest?

    init(
        route: ResolvedRoute, pool: UpstreamPool?, local: LocalEndpoint? = nil, head: UpstreamRequestHead,
        responseTimeout: TimeAmount,
        responseHeaders: HeaderFields, subject: String?, apiKey: String? = nil, upgrade: String?,
        upstreamSpan: (any Span)? = nil,
        secretHeaders: SecretHeaderNames = SecretHeaderNames(), allowed: AllowedRequest? = nil
    ) {
        self.secretHeaders = secretHeaders
        self.allowed = allowed
        self.resolved = route
        self.pool = pool
        self.local = local
        self.head = head
        self.responseTimeout = responseTimeout
        self.responseHeaders = responseHeaders
        self.subject = subject
        self.apiKey = apiKey
        self.upgrade = upgrade
        self.upstreamSpan = upstreamSpan
    }
}

extension ForwardPlan {
    /// The gateway answers CORS for the route: the backend's `Access-Control-*` fields are
    /// dropped, the gateway's go in their place (docs/policies.md, "CORS").
    var answersCORS: Bool { self.resolved.configuration.cors != nil }

    /// Whether the other end carries HTTP/2 end to end (trailers: gRPC needs them).
    var speaksHTTP2: Bool { self.local?.needsTrailers ?? self.pool?.wireProtocol.isHTTP2 ?? false }
}

enum PlanDecision {
    case ready(RequestPlan)
    /// Waiting on the auth service or a key refetch for a request on `route` (nil: the gateway's
    /// own endpoints).
    case pending(EventLoopFuture<RequestPlan>, route: String?)
}

/// Turns a request head into a plan (Pingora's request phases, in order): normalize the
/// target → health endpoints → route → authenticate → rewrite headers. Transport-free; the
/// framings (`HTTP1ServerConnection`, `HTTP2ServerStream`) run the plan.
struct RequestPlanner {
    let environment: any ExchangeEnvironment
    let snapshot: RuntimeSnapshot
    let connection: ClientConnectionInfo

    func plan(
        head: HTTPRequestHead, framing: BodyFraming, requestID: String, now: Double, trace: RequestTrace? = nil
    ) -> PlanDecision {
        let target: RequestTarget
        do {
            target = try RequestTarget(
                uri: head.uri, hostField: head.headers.first(name: "host")?[...], settings: self.snapshot.paths)
        } catch {
            let response = LocalResponse.problem(error.error, requestID: requestID)
            // An nginx `auth_request` call whose own target or Host is refused still gets an
            // answer nginx passes on (docs/authorizer.md).
            if let authorizer = self.snapshot.authorizer,
                let answer = AuthorizerEndpoints.refusedCall(response, uri: head.uri, configuration: authorizer)
            {
                return .ready(answer)
            }
            return .ready(.respond(response, close: false))
        }
        if let health = self.environment.healthResponse(path: target.path, method: head.method) {
            return .ready(.respond(health, close: false))
        }
        if let authorizer = self.snapshot.authorizer,
            AuthorizerEndpoints.handles(target.path, configuration: authorizer)
        {
            return AuthorizerEndpoints(configuration: authorizer, planner: self, requestID: requestID).plan(
                target, head: head, now: now, trace: trace)
        }
        // The assertion keys' JWKS beside the sign-in endpoints (docs/assertions.md).
        if let jwksPath = self.snapshot.authentication.assertionJWKSPath, target.path == jwksPath,
            let jwks = AssertionJWKSEndpoint.response(self.snapshot.configuration, method: head.method)
        {
            return .ready(.respond(jwks, close: false))
        }
        // helper/streams hook: the Shared Signals receiver (docs/streams.md), before routes and
        // the sign-in endpoints (its default path is under their prefix).
        if let signals = self.snapshot.signals,
            let decision = SignalsEndpoint(
                receiver: signals, environment: self.environment, connection: self.connection, requestID: requestID
            ).plan(target, head: head)
        {
            return decision
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
        // tokens naming them are hop-by-hop, never forwarded (docs/http2.md).
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
        let input = DecisionInput(
            method: head.method, target: target, headers: head.headers, connection: self.connection, now: now,
            trace: trace)
        switch self.decide(input, requestID: requestID) {
        case .ready(let decision):
            return .ready(
                self.plan(
                    decision, head: head, framing: framing, target: target, requestID: requestID, upgrade: upgrade))
        case .pending(let future, let route):
            let planner = self
            return .pending(
                future.assumeIsolated().map { decision in
                    planner.plan(
                        decision, head: head, framing: framing, target: target, requestID: requestID, upgrade: upgrade)
                }.nonisolated(),
                route: route)
        }
    }

    /// A decided request's plan: the gateway's own answer, or the request rewritten for its
    /// backend.
    private func plan(
        _ decision: AccessDecision, head: HTTPRequestHead, framing: BodyFraming, target: RequestTarget,
        requestID: String, upgrade: String?
    ) -> RequestPlan {
        let allowed: AllowedRequest
        switch decision {
        case .denied(let response, let route): return .respond(response, close: false, route: route)
        case .preflight(let response, let route): return .respond(response, close: false, route: route)
        case .allowed(let request): allowed = request
        }
        let route = allowed.resolved.configuration
        let backend = self.snapshot.backend(of: allowed.resolved)
        // nil only when a reload removed the backend while the decision waited (`UpstreamRegistry`).
        guard let pool = self.environment.pool(for: backend) else {
            return .respond(.problem(.upstreamUnreachable, requestID: requestID), close: false, route: route.name)
        }
        // A traced request's backend sees the upstream span as its parent.
        let trace = allowed.request.trace
        let upstreamSpan = trace?.child("upstream \(route.backend)", kind: .client)
        // The header rewrite is applied as the backend's head is written (`UpstreamRequestHead`).
        let rewrite = HeaderRewrite(
            framing: framing,
            policy: self.snapshot.forwarding,
            connection: self.connection,
            requestID: requestID,
            identity: allowed.identityHeaders,
            tokenEdits: allowed.tokenEdits,
            traceContext: upstreamSpan.map { trace!.propagationHeaders(for: $0) } ?? [],
            stripDPoPProof: !route.forwardDPoPProof,
            authorization: allowed.backendAuthorization,
            host: target.backendHost,
            forwardedHost: target.host?.name,
            upgrade: upgrade
        )
        let strip: String? =
            if route.stripPathPrefix, case .prefix(let prefix) = route.pathMatch { prefix } else { nil }
        let upstreamHead = UpstreamRequestHead(
            method: head.method, uri: target.upstreamURI(strippingPrefix: strip), clientFields: head.headers,
            rewrite: rewrite)
        return .forward(
            ForwardPlan(
                route: allowed.resolved,
                pool: pool,
                head: upstreamHead,
                responseTimeout: backend.responseTimeout,
                responseHeaders: allowed.responseHeaders,
                subject: allowed.identity?.token.subject,
                apiKey: allowed.identity?.apiKeyID,
                upgrade: upgrade,
                upstreamSpan: upstreamSpan,
                secretHeaders: self.snapshot.secretHeaders,
                allowed: allowed  // helper/streams hook
            )
        )
    }
}
