import NIOCore
import NIOHTTP1

/// What an access decision is about: a request as the client sent it (proxy mode) or as another
/// proxy describes it (authorizer mode, docs/authorizer.md). Everything the route table, the
/// authentication pipeline and the rate limits read.
struct DecisionInput {
    let method: HTTPMethod
    /// The canonical target (docs/forwarding.md, "Request targets"): the path and host routes
    /// match, DPoP's `htu` and the sign-in return path.
    let target: RequestTarget
    let headers: HTTPHeaders
    /// The client's connection: in authorizer mode, rebuilt from the caller's description.
    let connection: ClientConnectionInfo
    let now: Double
    var trace: RequestTrace? = nil
}

/// The decision on one request, before anything goes upstream: the same for a proxied request,
/// another proxy's question (authorizer mode) and `check --request`.
enum AccessDecision {
    case allowed(AllowedRequest)
    /// The gateway's own answer; `route` names the matched route (nil when none matched).
    case denied(LocalResponse, route: String?)
    /// A CORS preflight on a route with `cors`, answered before authentication (docs/policies.md,
    /// "CORS"): a granted one (204) or a refused one (403). Never goes to a backend.
    case preflight(LocalResponse, route: String)
}

/// An allowed request and what goes with it. A class: it carries the request and the identity,
/// two large values, through the decision's enum and into the plan, and as a struct each step
/// copied (retained and released) every field of both: measured, 0.3 µs of a request against
/// the one allocation it costs (docs/benchmarks.md).
final class AllowedRequest {
    let request: AuthRequest
    let resolved: ResolvedRoute
    /// nil for an anonymous request.
    let identity: Identity?
    /// For the client's response: new tokens after a refresh or sign-in, `RateLimit`, `DPoP-Nonce`.
    /// Appended to only while the decision is made, before anything else sees it.
    var responseHeaders: HeaderFields
    /// The verified identity headers for the backend.
    let identityHeaders: HeaderFields
    /// The access token's fate (and refresh tokens', always removed) on the way to the backend.
    let tokenEdits: [TokenEdit]
    /// The `Authorization` the backend gets instead of the caller's token (an exchanged token).
    var backendAuthorization: String? { self.identity?.backendAuthorization }

    init(
        request: AuthRequest, resolved: ResolvedRoute, identity: Identity?,
        responseHeaders: HeaderFields, identityHeaders: HeaderFields,
        tokenEdits: [TokenEdit]
    ) {
        self.request = request
        self.resolved = resolved
        self.identity = identity
        self.responseHeaders = responseHeaders
        self.identityHeaders = identityHeaders
        self.tokenEdits = tokenEdits
    }

    var route: RouteConfiguration { self.request.route }
}

enum DecisionStep {
    case ready(AccessDecision)
    /// Waiting on the auth service, an endpoint or a key refetch for a request on `route`.
    case pending(EventLoopFuture<AccessDecision>, route: String)
}

extension RequestPlanner {
    /// Route → authenticate → rate limits → identity headers (docs/architecture.md).
    func decide(_ input: DecisionInput, requestID: String) -> DecisionStep {
        // A route's `methods` apply to what a preflight asks for, not to `OPTIONS` itself.
        let preflight = CORS.Preflight(method: input.method, headers: input.headers)
        // A path that names another route without case or trailing dots is read differently by
        // servers that ignore them and servers that do not: refused, never routed
        // (docs/forwarding.md, "Spellings that are refused").
        if self.snapshot.lenientRoutes.namesAnotherRoute(
            input.target, method: preflight?.method ?? input.method.rawValue, in: self.snapshot.routes)
        {
            let error = TargetRefusal.ambiguousPath(.lenientVariant).error
            return .ready(.denied(.problem(error, requestID: requestID), route: nil))
        }
        if let preflight,
            let resolved = self.snapshot.routes.match(
                host: input.target.host?.name, path: input.target.path, method: preflight.method),
            let cors = resolved.configuration.cors
        {
            return .ready(
                .preflight(
                    CORS.answer(preflight, cors: cors, requestID: requestID), route: resolved.configuration.name))
        }
        guard
            let resolved = self.snapshot.routes.match(
                host: input.target.host?.name, path: input.target.path, method: input.method.rawValue)
        else {
            return .ready(.denied(.problem(.routeNotFound, requestID: requestID), route: nil))
        }
        if let preflight, resolved.configuration.cors != nil {
            // The route takes `OPTIONS` and answers CORS, but not for the method asked about.
            return .ready(
                .preflight(
                    CORS.refusal(CORS.methodRefusal(preflight.method), requestID: requestID),
                    route: resolved.configuration.name))
        }
        let request = AuthRequest(
            headers: input.headers, resolved: resolved, keys: self.environment.keys, now: input.now,
            connection: input.connection, trustedProxies: self.snapshot.forwarding.trustedProxies,
            method: input.method, target: input.target, trace: input.trace
        )
        switch self.environment.authenticator.authenticate(request) {
        case .done(let outcome):
            return .ready(self.decide(outcome, request: request, resolved: resolved, requestID: requestID))
        case .pending(let future):
            let planner = self
            return .pending(
                future.assumeIsolated().map { outcome in
                    planner.decide(outcome, request: request, resolved: resolved, requestID: requestID)
                }.nonisolated(),
                route: resolved.configuration.name)
        }
    }

    private func decide(
        _ outcome: AuthOutcome, request: AuthRequest, resolved: ResolvedRoute, requestID: String
    ) -> AccessDecision {
        let decision = self.decideWithoutCORS(outcome, request: request, resolved: resolved, requestID: requestID)
        guard let cors = request.route.cors else { return decision }
        // The gateway's own refusals carry the CORS fields too, so that the page can read them.
        let fields = CORS.responseHeaders(cors, origin: request.headers.first(name: "origin"))
        switch decision {
        case .allowed(let allowed):
            allowed.responseHeaders += fields
            return .allowed(allowed)
        case .denied(var response, let route):
            for (name, value) in fields { response.headers.add(name: name, value: value) }
            return .denied(response, route: route)
        case .preflight:
            return decision
        }
    }

    private func decideWithoutCORS(
        _ outcome: AuthOutcome, request: AuthRequest, resolved: ResolvedRoute, requestID: String
    ) -> AccessDecision {
        let route = request.route
        var identity: Identity?
        switch outcome {
        case .rejected(let error, let headers):
            return .denied(.problem(error, requestID: requestID, extraHeaders: headers), route: route.name)
        case .redirect(let location, let headers):
            return .denied(.redirect(to: location, headers: headers), route: route.name)
        case .anonymous:
            identity = nil
        case .authenticated(let authenticated):
            identity = authenticated
        }
        // Rate limits (docs/rate-limits.md): after authentication, before anything goes upstream.
        var responseHeaders = identity?.responseHeaders ?? []
        if let limiter = self.snapshot.rateLimiter, let tables = limiter.tables(forRoute: route.name) {
            switch limiter.check(
                tables, route: route.name, fields: IdentityFields(identity: identity, request: request),
                now: NIODeadline.now().uptimeNanoseconds,
                memo: self.environment.rateLimitKeys)
            {
            case .admitted(let header):
                if let header { responseHeaders.append(("RateLimit", header)) }
            case .refused(let limit, let retryAfter, let headers):
                let error = GatewayError.rateLimited(limit, retryAfterSeconds: retryAfter)
                // A refresh already rotated the client's tokens: the refusal carries them.
                return .denied(
                    .problem(error, requestID: requestID, extraHeaders: responseHeaders + headers), route: route.name)
            }
        }
        var edits = self.snapshot.refreshTokenRemovals
        var identityHeaders: HeaderFields = []
        if let identity {
            if identity.backendAuthorization != nil {
                // An exchanged token replaces the caller's, which reaches the backend nowhere
                // (docs/token-exchange.md): removed from where it came (a session's never goes).
                if !identity.accessToken.location.isSession {
                    edits.append(TokenEdit(location: identity.accessToken.location, replacement: nil))
                }
            } else if !route.forwardAccessToken {
                edits.append(TokenEdit(location: identity.accessToken.location, replacement: nil))
            } else if case .session = identity.accessToken.location {
                // A session's token reaches the backend as `Authorization: Bearer`.
                edits.append(
                    TokenEdit(location: identity.accessToken.location, replacement: identity.bearerAuthorization))
            } else if let replacement = identity.replacementAccessToken {
                edits.append(TokenEdit(location: identity.accessToken.location, replacement: replacement))
            }
            if !self.snapshot.forwarding.identityHeaders.isEmpty {
                identityHeaders = Self.identityHeaders(
                    IdentityFields(identity: identity, request: request), policy: self.snapshot.forwarding)
            }
            // What steps made for the backend (a signed assertion) goes with the identity headers.
            identityHeaders += identity.backendHeaders
        }
        return .allowed(
            AllowedRequest(
                request: request, resolved: resolved, identity: identity, responseHeaders: responseHeaders,
                identityHeaders: identityHeaders, tokenEdits: edits))
    }

    /// The identity headers (docs/configuration.md): each configured name with the value its
    /// path reads, in header form; names without a value are left out.
    static func identityHeaders(_ fields: IdentityFields, policy: ForwardingPolicy) -> HeaderFields {
        var headers: HeaderFields = []
        for header in policy.identityHeaders {
            if let value = fields.value(header.path), let text = IdentityLookup.headerText(for: value) {
                headers.append((header.name, text))
            }
        }
        return headers
    }
}
