import AuthGateway
import NIOCore
import NIOHTTP1

/// `/authorize`: the authorization request, the login form, and the redirect back to the client.
///
/// `GET` (or a `POST` without `action`) checks the request and shows the form; the form posts
/// the request's parameters back with `action=sign-in` (user name and password) or
/// `action=cancel`, and they are checked again. A browser that already has a provider session
/// skips the form (unless `prompt=login`); `prompt=none` without one gets `login_required`.
extension DemoAuthService {
    func authorize(_ request: SimpleRequest) -> SimpleResponse {
        let form = request.method == .POST ? DemoForm(encoded: request.bodyText) : DemoForm(queryOf: request.uri)
        if form.fields[DemoPages.Field.action] == nil {
            self.records.withLockedValue { $0.lastAuthorization = form.fields }
        }
        // After a form POST, 303 makes the browser follow with a GET.
        let redirectStatus: HTTPResponseStatus = request.method == .POST ? .seeOther : .found
        let authorization: DemoAuthorizationRequest
        switch DemoAuthorizationRequest.check(form, clients: self.clientsBox.withLockedValue { $0 }) {
        case .success(let checked):
            authorization = checked
        case .failure(.page(let detail)):
            return DemoPages.error(.badRequest, detail: detail)
        case .failure(.redirect(let error, let description, let redirectURI, let state)):
            return self.errorRedirect(error, description, to: redirectURI, state: state, status: redirectStatus)
        }
        switch form[DemoPages.Field.action] {
        case DemoPages.Field.cancel?:
            return self.errorRedirect(
                "access_denied", "the user cancelled the sign-in", to: authorization.redirectURI,
                state: authorization.state, status: redirectStatus)
        case DemoPages.Field.signIn?:
            return self.signIn(form, authorization, request)
        default:
            let prompt = authorization.prompt?.split(separator: " ") ?? []
            if !prompt.contains("login"), let (_, session) = self.providerSession(of: request),
                prompt.contains("none") || self.skipsLoginFormWhenSignedIn
            {
                return self.issueCode(authorization, session: session, status: redirectStatus)
            }
            if prompt.contains("none") {
                return self.errorRedirect(
                    "login_required", "the user is not signed in", to: authorization.redirectURI,
                    state: authorization.state, status: redirectStatus)
            }
            return DemoPages.login(authorization, users: Self.users, userName: nil, error: nil)
        }
    }

    /// The form was submitted: a known user with the right password gets a provider session
    /// (the one the browser has, when it is the same user's) and a code.
    private func signIn(
        _ form: DemoForm, _ authorization: DemoAuthorizationRequest, _ request: SimpleRequest
    ) -> SimpleResponse {
        let userName = form[DemoPages.Field.userName] ?? ""
        guard let user = Self.users.first(where: { $0.userName == userName }),
            form[DemoPages.Field.password] == user.password
        else {
            return DemoPages.login(
                authorization, users: Self.users, userName: userName, error: "Incorrect user name or password.")
        }
        let now = self.now
        let existing = self.providerSession(of: request)
        let (handle, session) = self.state.withLockedValue { state in
            if let existing, existing.session.userID == user.userID,
                let session = state.reauthenticate(handle: existing.handle, now: now)
            {
                return (existing.handle, session)
            }
            let handle = DemoSecret.make()
            return (handle, state.startSession(handle: handle, sid: DemoSecret.make(), userID: user.userID, now: now))
        }
        return self.issueCode(authorization, session: session, status: .seeOther, cookie: Self.sessionCookie(handle))
    }

    private func issueCode(
        _ authorization: DemoAuthorizationRequest, session: DemoOIDCState.Session, status: HTTPResponseStatus,
        cookie: String? = nil
    ) -> SimpleResponse {
        let code = DemoSecret.make()
        let grant = DemoOIDCState.Grant(
            clientID: authorization.client.clientID, redirectURI: authorization.redirectURI,
            codeChallenge: authorization.codeChallenge, nonce: authorization.nonce, scope: authorization.scope,
            sid: session.sid, userID: session.userID, authTime: session.authTime,
            expiresAt: self.now + Self.codeLifetimeSeconds)
        self.state.withLockedValue { $0.issueCode(code, for: grant) }
        self.records.withLockedValue { $0.lastCode = code }
        var fields = [("code", code)]
        if let state = authorization.state { fields.append(("state", state)) }
        fields.append(("iss", self.issuer))
        return Self.redirect(DemoForm.appending(fields, to: authorization.redirectURI), status: status, cookie: cookie)
    }

    /// An OAuth error for the client, at its registered redirect URI (RFC 6749 §4.1.2.1).
    private func errorRedirect(
        _ error: String, _ description: String, to redirectURI: String, state: String?, status: HTTPResponseStatus
    ) -> SimpleResponse {
        var fields = [("error", error), ("error_description", description)]
        if let state { fields.append(("state", state)) }
        fields.append(("iss", self.issuer))
        return Self.redirect(DemoForm.appending(fields, to: redirectURI), status: status)
    }

    /// Submits the login form for `authorizationURL` (a relying party's redirect to
    /// `/authorize`) as `userName` with the right password, without a browser: where the
    /// provider sends the browser next (`redirect_uri?code=…&state=…&iss=…`), or nil when it
    /// refuses with a page (unknown client, unregistered redirect URI, unknown user).
    public func signIn(authorizationURL: String, userName: String) -> String? {
        guard let user = Self.users.first(where: { $0.userName == userName }) else { return nil }
        let query = authorizationURL.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        let body =
            query + "&"
            + DemoForm.encode([
                (DemoPages.Field.action, DemoPages.Field.signIn), (DemoPages.Field.userName, user.userName),
                (DemoPages.Field.password, user.password),
            ])
        let request = SimpleRequest(
            method: .POST, uri: "/authorize", headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: ByteBuffer(string: body))
        return self.authorize(request).headers.first(name: "location")
    }
}
