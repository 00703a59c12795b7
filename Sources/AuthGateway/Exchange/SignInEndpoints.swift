import NIOCore
import NIOHTTP1

/// The gateway's own sign-in endpoints under `browserSignIn.pathPrefix` (docs/browser-sign-in.md):
/// `sign-in?rd=<path>`, `callback`, `sign-out` and `backchannel-logout`. Answered before route
/// matching, never forwarded.
struct SignInEndpoints {
    let signIn: BrowserSignIn
    let environment: any ExchangeEnvironment
    let requestID: String

    /// The plan for `target` when it is one of the endpoints' paths (nil otherwise).
    func plan(_ target: RequestTarget, head: HTTPRequestHead, now: Double) -> PlanDecision? {
        let prefix = self.signIn.configuration.pathPrefix
        guard target.path.hasPrefix(prefix) else { return nil }
        let name = target.path.dropFirst(prefix.count)
        let query = target.query ?? ""
        switch (name, head.method) {
        case ("sign-in", .GET), ("sign-in", .HEAD):
            let returnPath = ReturnPath.sanitize(FormDecoding.value("rd", in: query)?[...])
            return self.ready(self.signIn.start(returnPath: returnPath, headers: head.headers, now: now), head)
        case ("callback", .GET):
            return self.callback(query: query, head: head, now: now)
        case ("sign-out", .POST), ("sign-out", .GET):
            return self.ready(self.signOut(head), head)
        case ("backchannel-logout", .POST):
            let (signIn, responder) = (self.signIn, self.responder(head))
            let endpoint = LocalEndpoint(
                maximumBodyBytes: Self.maximumLogoutBody, needsTrailers: false,
                answer: { body, eventLoop in
                    signIn.backchannelLogout(body: Substring(String(buffer: body)), now: signIn.now, on: eventLoop)
                        .map { LocalEndpoint.Answer(responder.response(for: $0)) }
                },
                tooLarge: { LocalEndpoint.Answer(responder.response(for: .invalidLogout)) })
            return .ready(.forward(endpoint.plan(for: head)))
        case ("sign-in", _), ("callback", _), ("sign-out", _), ("backchannel-logout", _):
            let error = GatewayError.malformedRequest("This sign-in endpoint does not take \(head.method.rawValue)")
            return .ready(.respond(self.page(error, head), close: false))
        default:
            return .ready(.respond(.problem(.routeNotFound, requestID: self.requestID), close: false))
        }
    }

    /// A logout token is a few KiB; anything much larger is not one.
    static let maximumLogoutBody = 64 * 1024

    private func callback(query: Substring, head: HTTPRequestHead, now: Double) -> PlanDecision {
        switch self.signIn.finishFlow(query: query, headers: head.headers, now: now) {
        case .failure(let failure):
            self.environment.metrics.increment(.signIn(outcome: failure.outcome))
            return self.ready(.refused(failure.error, cookies: failure.cookies), head)
        case .success(let (flow, code)):
            let endpoint = self.environment.signInTokenEndpoint(self.signIn)
            guard
                let pending = self.signIn.complete(
                    flow, code: code, headers: head.headers, endpoint: endpoint)
            else { return self.ready(.refused(.signInUnavailable, cookies: []), head) }
            let responder = self.responder(head)
            return .pending(pending.map { .respond(responder.response(for: $0), close: false) }, route: nil)
        }
    }

    /// `POST sign-out` from the site's own pages (and `GET` typed or linked on it): the
    /// browser's session ends everywhere. A cross-site request cannot sign a user out.
    private func signOut(_ head: HTTPRequestHead) -> SignInAnswer {
        let sameOrigin: Bool
        if head.method == .GET {
            let site = head.headers.first(name: "sec-fetch-site")
            sameOrigin =
                site.map { ASCII.equalsIgnoringCase($0, "same-origin") || ASCII.equalsIgnoringCase($0, "none") }
                ?? false
        } else {
            sameOrigin = BrowserRequest.isSameOrigin(
                method: head.method, headers: head.headers, publicBaseURL: self.signIn.configuration.publicBaseURL)
        }
        guard sameOrigin else { return .refused(.signInCSRF, cookies: []) }
        let handle = self.signIn.cookies.sessionHandle(in: head.headers)
        return self.signIn.signOut(handle.flatMap { self.signIn.sessions.held($0.digest) }, handle: handle)
    }

    private func ready(_ answer: SignInAnswer, _ head: HTTPRequestHead) -> PlanDecision {
        .ready(.respond(self.responder(head).response(for: answer), close: false))
    }

    private func responder(_ head: HTTPRequestHead) -> SignInResponder {
        SignInResponder(requestID: self.requestID, prefersHTML: BrowserRequest.prefersHTML(head.headers))
    }

    private func page(_ error: GatewayError, _ head: HTTPRequestHead) -> LocalResponse {
        self.responder(head).page(error)
    }
}

/// Turns a sign-in endpoint's answer into the response (safe to use from any loop).
struct SignInResponder: Sendable {
    let requestID: String
    let prefersHTML: Bool

    func response(for answer: SignInAnswer) -> LocalResponse {
        switch answer {
        case .redirect(let location, let cookies):
            return .redirect(to: location, headers: cookies.map { ("Set-Cookie", $0) })
        case .refused(let error, let cookies):
            var response = self.page(error)
            for cookie in cookies { response.headers.add(name: "Set-Cookie", value: cookie) }
            return response
        case .loggedOut:
            return .text(.ok, "", contentType: "text/plain; charset=utf-8")
        case .invalidLogout:
            var response = LocalResponse.json(.badRequest, ["error": "invalid_request"])
            response.error = .malformedRequest("The logout token is invalid")
            return response
        }
    }

    /// An error of a sign-in endpoint: problem+json, or a small HTML page (the same title and
    /// detail, escaped) when the browser prefers HTML.
    func page(_ error: GatewayError) -> LocalResponse {
        self.prefersHTML ? .htmlPage(error, requestID: self.requestID) : .problem(error, requestID: self.requestID)
    }
}
