import NIOCore
import NIOHTTP1

/// Authorizer mode's endpoints (docs/authorizer.md): another proxy's "may this request pass?"
/// under `authorizer.pathPrefix` (`auth-request`, `forward-auth`, `ext-authz/<path>`) and
/// Envoy's gRPC `Check` at its standard path. The original request is rebuilt from the call
/// (`OriginalRequest`), decided by `RequestPlanner.decide` exactly as a proxied request is, and
/// the decision turned into the caller's answer; no backend is contacted. Answered before the
/// sign-in endpoints and route matching, and only when `authorizer` is configured.
struct AuthorizerEndpoints {
    let configuration: AuthorizerConfiguration
    let planner: RequestPlanner
    let requestID: String

    /// Envoy cannot put a prefix before a gRPC method: `Check` is served here.
    static let checkPath = "/envoy.service.auth.v3.Authorization/Check"

    /// Whether `path` is one of the endpoints' (cheap: a prefix and one comparison).
    static func handles(_ path: String, configuration: AuthorizerConfiguration) -> Bool {
        path.hasPrefix(configuration.pathPrefix) || path == Self.checkPath
    }

    /// The plan for a call at `target` (one of `handles`' paths).
    func plan(_ target: RequestTarget, head: HTTPRequestHead, now: Double, trace: RequestTrace?) -> PlanDecision {
        guard self.trustsPeer else {
            // Not decided: an untrusted peer learns nothing about any route.
            return .ready(self.respond(.problem(.authorizerUntrustedPeer, requestID: self.requestID), route: nil))
        }
        if target.path == Self.checkPath {
            return self.check(head)
        }
        let prefix = self.configuration.pathPrefix
        guard let contract = AuthorizerContract.named(target.path.dropFirst(prefix.count)[...]) else {
            return .ready(self.respond(.problem(.routeNotFound, requestID: self.requestID), route: nil))
        }
        switch OriginalRequest.rebuild(
            contract, method: head.method, uri: head.uri, headers: head.headers,
            extAuthzPrefix: prefix + AuthorizerContract.extAuthzName, peerIP: self.planner.connection.peerIP)
        {
        case .failure(let error):
            // Every refusal follows the contract, also one made before a route is found.
            let response = LocalResponse.problem(.malformedRequest(error.description), requestID: self.requestID)
            return .ready(self.deny(response, route: nil, contract: contract))
        case .success(let original):
            switch self.decide(original, now: now, trace: trace) {
            case .ready(let decision):
                return .ready(self.answer(decision, contract: contract))
            case .pending(let future, let route):
                let endpoints = self
                return .pending(
                    future.assumeIsolated().map { endpoints.answer($0, contract: contract) }.nonisolated(),
                    route: route)
            }
        }
    }

    /// The answer to a call to the `auth-request` endpoint whose own target could not be made
    /// canonical (its `Host`, say): `response` as nginx passes it on; nil for any other request.
    static func refusedCall(_ response: LocalResponse, uri: String, configuration: AuthorizerConfiguration)
        -> RequestPlan?
    {
        guard ASCII.hasBytePrefix(uri, configuration.pathPrefix + "auth-request") else { return nil }
        var answer = Self.forNginx(response)
        answer.authorizer = true
        return .respond(answer, close: false)
    }

    /// Whether the caller (the TCP peer) is one of `trustedPeers`.
    private var trustsPeer: Bool {
        guard let address = try? SocketAddress(ipAddress: self.planner.connection.peerIP, port: 0) else {
            return false
        }
        return self.configuration.trustedPeers.contains { $0.contains(address) }
    }

    /// Decides `original` with the planner's one decision path; an auth service that fails
    /// the future is a refusal (503), never an allow.
    func decide(_ original: OriginalRequest, now: Double, trace: RequestTrace?) -> DecisionStep {
        // The same canonical target as a proxied request's (docs/forwarding.md, "Request
        // targets"): an ambiguous original is a denial, never an allow.
        let target: RequestTarget
        do {
            target = try RequestTarget(
                uri: original.uri, hostField: original.host?[...], settings: self.planner.snapshot.paths)
        } catch {
            return .ready(.denied(.problem(error.error, requestID: self.requestID), route: nil))
        }
        let input = DecisionInput(
            method: original.method, target: target, headers: original.headers,
            connection: ClientConnectionInfo(
                peerIP: original.clientIP, peerIsTrustedProxy: false, isTLS: original.isTLS),
            now: now, trace: trace)
        switch self.planner.decide(input, requestID: self.requestID) {
        case .ready(let decision):
            return .ready(decision)
        case .pending(let future, let route):
            let requestID = self.requestID
            return .pending(
                future.assumeIsolated().recover { _ in
                    .denied(.problem(.authServiceUnavailable, requestID: requestID), route: route)
                }.nonisolated(), route: route)
        }
    }

    /// A local answer counted under `mode="authorizer"`.
    func respond(_ response: LocalResponse, route: String? = nil) -> RequestPlan {
        var response = response
        response.authorizer = true
        return .respond(response, close: false, route: route)
    }
}

extension AccessDecision {
    /// The matched route's name (nil when none matched).
    var routeName: String? {
        switch self {
        case .allowed(let allowed): return allowed.route.name
        case .denied(_, let route): return route
        case .preflight(_, let route): return route
        }
    }
}
