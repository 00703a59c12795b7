import NIOCore
import NIOHTTP1
import SwiftProtobuf

/// Envoy's gRPC `envoy.service.auth.v3.Authorization/Check` (docs/authorizer.md): a
/// `LocalEndpoint`, so the message arrives through the HTTP/2 stream's usual limits and flow
/// control, and the answer leaves with `grpc-status` in the trailers.
extension AuthorizerEndpoints {
    /// A `CheckRequest` is a few KiB; a much larger message is not one Envoy sends.
    static let maximumCheckBytes = 1024 * 1024

    func check(_ head: HTTPRequestHead) -> PlanDecision {
        let contentType = head.headers.first(name: "content-type") ?? ""
        guard head.method == .POST, ASCII.hasPrefixIgnoringCase(contentType[...], "application/grpc") else {
            let error = GatewayError.malformedRequest("This is a gRPC method: POST with content-type application/grpc")
            return .ready(self.respond(.problem(error, requestID: self.requestID)))
        }
        let decider = CheckDecider(endpoints: self)
        let endpoint = LocalEndpoint(
            maximumBodyBytes: Self.maximumCheckBytes, needsTrailers: true, authorizer: true,
            answer: { body, eventLoop in decider.answer(body, on: eventLoop) },
            tooLarge: {
                CheckDecider.failure(
                    code: GRPCStatusCode.resourceExhausted, "The CheckRequest is larger than the gateway accepts")
            })
        return .ready(.forward(endpoint.plan(for: head)))
    }
}

/// Decides one `Check` once its message has arrived, on the connection's loop.
///
/// `@unchecked Sendable`: `LocalEndpoint` needs a sendable answer, but the lease calls it on
/// the loop the request arrived on, which is the only place the planner is used (checked).
final class CheckDecider: @unchecked Sendable {
    private let endpoints: AuthorizerEndpoints

    init(endpoints: AuthorizerEndpoints) { self.endpoints = endpoints }

    func answer(_ body: ByteBuffer, on eventLoop: EventLoop) -> EventLoopFuture<LocalEndpoint.Answer> {
        eventLoop.preconditionInEventLoop()
        guard let message = CheckMessages.message(in: body),
            let request = try? Envoy_Service_Auth_V3_CheckRequest(serializedBytes: Array(message.readableBytesView))
        else {
            return eventLoop.makeSucceededFuture(
                Self.failure(code: GRPCStatusCode.invalidArgument, "The message is not a CheckRequest"))
        }
        let planner = self.endpoints.planner
        let original: OriginalRequest
        switch CheckMessages.original(request, peerIP: planner.connection.peerIP) {
        case .failure(let error):
            return eventLoop.makeSucceededFuture(Self.failure(code: GRPCStatusCode.invalidArgument, error.description))
        case .success(let rebuilt): original = rebuilt
        }
        switch self.endpoints.decide(original, now: planner.environment.wallClock(), trace: nil) {
        case .ready(let decision):
            return eventLoop.makeSucceededFuture(self.answer(decision, original: original))
        case .pending(let future, _):
            return future.assumeIsolated().map { self.answer($0, original: original) }.nonisolated()
        }
    }

    /// The `CheckResponse` for `decision`.
    private func answer(_ decision: AccessDecision, original: OriginalRequest) -> LocalEndpoint.Answer {
        let response: Envoy_Service_Auth_V3_CheckResponse
        switch decision {
        case .allowed(let allowed):
            let headers =
                allowed.identityHeaders + AuthorizerEndpoints.upstreamTokenHeaders(allowed.tokenEdits)
                + (allowed.backendAuthorization.map { [("authorization", $0)] } ?? [])
            response = CheckMessages.allowed(
                headers: headers, remove: self.removals(allowed, original: original, setting: headers),
                responseHeaders: allowed.responseHeaders)
        case .denied(let local, _):
            response = Self.denied(local)
        case .preflight(let local, _) where local.status == .noContent:
            // Allowed without a token (docs/authorizer.md): the backend answers the OPTIONS and
            // Envoy adds the gateway's `Access-Control-*` fields to that answer.
            response = CheckMessages.allowed(
                headers: [], remove: [], responseHeaders: local.headers.map { ($0.name, $0.value) })
        case .preflight(let local, _):
            response = Self.denied(local)
        }
        var answer = LocalEndpoint.Answer(
            status: .ok, headers: [("content-type", "application/grpc")], body: CheckMessages.frame(response),
            trailers: [("grpc-status", String(GRPCStatusCode.ok))])
        answer.route = decision.routeName
        return answer
    }

    private static func denied(_ local: LocalResponse) -> Envoy_Service_Auth_V3_CheckResponse {
        CheckMessages.denied(
            status: Int(local.status.code), headers: local.headers.map { ($0.name, $0.value) }, body: local.body,
            message: local.error?.detail ?? local.status.reasonPhrase)
    }

    /// The inbound headers the gateway would strip before the backend: identity headers the
    /// client sent (an assertion header among them), and the tokens the backend must not get
    /// (refresh tokens; the access token when the route does not forward it, or when a new one
    /// replaces it) — but none that `setting` sets. Envoy applies `headers` first (overwriting
    /// the client's value) and `headers_to_remove` after (ext_authz.cc): a name in both would
    /// reach the backend with no value at all — the exchanged `Authorization` always, the
    /// assertion and an identity header whenever the client sent its own (docs/authorizer.md).
    private func removals(
        _ allowed: AllowedRequest, original: OriginalRequest, setting: HeaderFields
    ) -> [String] {
        let policy = self.endpoints.planner.snapshot.forwarding
        let set = Set(setting.map { $0.name.lowercased() })
        var names: [String] = []
        for (name, _) in original.headers where HeaderRewriter.isStrippedIdentityHeader(name, policy: policy) {
            let lower = name.lowercased()
            if !set.contains(lower) && !names.contains(lower) { names.append(lower) }
        }
        for edit in allowed.tokenEdits {
            guard case .header(let name, _) = edit.location else { continue }
            let lower = name.lowercased()
            if edit.replacement == nil && !set.contains(lower) && !names.contains(lower) { names.append(lower) }
        }
        return names
    }

    /// A call that cannot be decided: `grpc-status` `code` and no message (Trailers-Only
    /// would do; headers and trailers are what every client takes).
    static func failure(code: Int, _ message: String) -> LocalEndpoint.Answer {
        LocalEndpoint.Answer(
            status: .ok, headers: [("content-type", "application/grpc")], body: ByteBuffer(),
            trailers: [("grpc-status", String(code)), ("grpc-message", GRPCStatusCode.percentEncoded(message))])
    }
}
