/// Who is sent to sign in (docs/browser-sign-in.md): on a route with `signIn: true`, a browser
/// navigation that brought no usable credentials (none, an unknown or ended session, a session
/// whose refresh was refused) gets a 302 to the provider instead of the 401. Every other
/// request keeps its 401.
struct SignInRedirect {
    let signIn: BrowserSignIn

    func apply(_ outcome: AuthOutcome, _ request: AuthRequest) -> AuthOutcome {
        guard request.route.signIn, case .rejected(let error, let headers) = outcome,
            error == .tokenMissing || error == .refreshRejected,
            BrowserRequest.isNavigation(method: request.method, headers: request.headers)
        else { return outcome }
        // The canonical target: the path the route was matched on, with its query.
        let returnPath = ReturnPath.sanitize(request.target.upstreamURI(strippingPrefix: nil)[...])
        switch self.signIn.start(returnPath: returnPath, headers: request.headers, now: request.now) {
        case .redirect(let location, let cookies):
            return .redirect(location: location, headers: headers + cookies.map { ("Set-Cookie", $0) })
        case .refused(let refusal, _):
            return .rejected(refusal, headers: headers)
        case .loggedOut, .invalidLogout:
            return outcome
        }
    }
}
