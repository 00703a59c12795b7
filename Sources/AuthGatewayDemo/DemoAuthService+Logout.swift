import AuthGateway
import Foundation
import NIOCore
import NIOHTTP1

/// Ending provider sessions, and telling the relying parties (back-channel logout).
///
/// `GET /end-session` is RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0):
/// `id_token_hint` (an ID token of this provider, expired or not), `client_id`,
/// `post_logout_redirect_uri` (registered for that client, else an error page) and `state`.
/// It ends the browser's provider session (and the hint's `sid`), posts a logout token to every
/// client that got tokens in it, waits for their answers (at most 5 s), then redirects to
/// `post_logout_redirect_uri?state=…` or shows "signed out". `POST /demo/logout?sub=…` or
/// `?sid=…` does the same without a browser and answers what was delivered.
extension DemoAuthService {
    static let backChannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

    func endSession(_ request: SimpleRequest, on eventLoop: EventLoop) -> EventLoopFuture<SimpleResponse> {
        let form = request.method == .POST ? DemoForm(encoded: request.bodyText) : DemoForm(queryOf: request.uri)
        func refuse(_ detail: String) -> EventLoopFuture<SimpleResponse> {
            eventLoop.makeSucceededFuture(DemoPages.error(.badRequest, title: "Sign-out error", detail: detail))
        }
        guard !form.malformed, form.repeated.isEmpty else {
            return refuse("The request is malformed or repeats a parameter.")
        }
        var hint: VerifiedToken?
        if let token = form["id_token_hint"] {
            guard let verified = self.verified(Substring(token), audiences: nil) else {
                return refuse("id_token_hint is not an ID token of this provider.")
            }
            hint = verified
        }
        let hintAudiences = hint.map { Self.audiences(of: $0.claims) } ?? []
        if let clientID = form["client_id"], hint != nil, !hintAudiences.contains(clientID) {
            return refuse("client_id does not match id_token_hint.")
        }
        let clientID = form["client_id"] ?? hintAudiences.first
        let client = clientID.flatMap { id in self.clientsBox.withLockedValue { $0[id] } }
        if clientID != nil, client == nil { return refuse("The client is not registered.") }
        let redirectURI = form["post_logout_redirect_uri"]
        if let redirectURI, client?.postLogoutRedirectURIs.contains(redirectURI) != true {
            return refuse("post_logout_redirect_uri is not registered for this client.")
        }

        let browserSession = self.providerSession(of: request)
        let hintSID = hint?.claims["sid"]?.stringValue
        let ended = self.state.withLockedValue { state in
            var ended: [DemoOIDCState.Session] = []
            if let browserSession, let session = state.endSession(handle: browserSession.handle) {
                ended.append(session)
            }
            if let hintSID, let hint {
                ended += state.endSessions(sid: hintSID, userID: hint.subject)
            }
            return ended
        }
        return self.sendLogoutTokens(for: ended, on: eventLoop).map { _ in
            guard let redirectURI else {
                var page = DemoPages.signedOut()
                page.headers.add(name: "Set-Cookie", value: Self.clearedSessionCookie)
                return page
            }
            let location = form["state"].map { DemoForm.appending([("state", $0)], to: redirectURI) } ?? redirectURI
            return Self.redirect(location, cookie: Self.clearedSessionCookie)
        }
    }

    /// `POST /demo/logout?sub=…` (user id or user name) and/or `?sid=…`.
    func adminLogout(_ request: SimpleRequest, on eventLoop: EventLoop) -> EventLoopFuture<SimpleResponse> {
        let query = DemoForm(queryOf: request.uri)
        let form = query.fields.isEmpty ? DemoForm(encoded: request.bodyText) : query
        guard form["sub"] != nil || form["sid"] != nil else {
            return eventLoop.makeSucceededFuture(
                .json(.badRequest, ["error": "invalid_request", "error_description": "sub or sid is required"]))
        }
        return self.endSessions(sub: form["sub"], sid: form["sid"], on: eventLoop).map { ended, deliveries in
            .json(
                .ok,
                [
                    "ended": .array(ended.map { .string($0.sid) }),
                    "deliveries": .array(deliveries.map(Self.json)),
                ])
        }
    }

    /// Ends sessions as `/demo/logout` does: the ended sessions and the logout tokens' deliveries.
    func endSessions(
        sub: String?, sid: String?, on eventLoop: EventLoop
    )
        -> EventLoopFuture<([DemoOIDCState.Session], [BackChannelDelivery])>
    {
        let userID = sub.map { sub in Self.users.first { $0.userName == sub }?.userID ?? sub }
        let ended = self.state.withLockedValue { $0.endSessions(sid: sid, userID: userID) }
        return self.sendLogoutTokens(for: ended, on: eventLoop).map { (ended, $0) }
    }

    /// Ends the provider session `sid` and/or every session of `sub` (a user id or user name)
    /// as an admin would, and sends their back-channel logouts: the deliveries, each with the
    /// relying party's status.
    public func endSessions(sub: String? = nil, sid: String? = nil) async -> [BackChannelDelivery] {
        (try? await self.endSessions(sub: sub, sid: sid, on: self.eventLoop).get().1) ?? []
    }

    /// A logout token of this provider (Back-Channel Logout 1.0 §2.4): `typ: logout+jwt`, `iss`,
    /// `aud`, `iat`, `exp` (2 minutes), `jti`, `events`, `sid` and/or `sub`. `adjust` changes the
    /// claims before signing, for tests that want an invalid one.
    public func makeLogoutToken(
        clientID: String, sid: String?, sub: String?, jti: String = UUID().uuidString.lowercased(),
        adjust: (inout JSONObject) -> Void = { _ in }
    ) throws -> String {
        let now = self.now
        var claims: JSONObject = [
            "iss": .string(self.issuer), "aud": .string(clientID), "iat": .number(JSONNumber(now)),
            "exp": .number(JSONNumber(now + 120)), "jti": .string(jti),
            "events": .object(JSONObject([(Self.backChannelLogoutEvent, JSONValue.object(JSONObject()))])),
        ]
        if let sid { claims["sid"] = .string(sid) }
        if let sub { claims["sub"] = .string(sub) }
        adjust(&claims)
        return try self.signer.sign(claims, header: ["typ": "logout+jwt"])
    }

    /// Posts `logoutToken` to `uri` as the provider does when a session ends (recorded in
    /// `backChannelDeliveries`); the relying party's answer.
    public func deliverLogoutToken(_ logoutToken: String, to uri: String) async -> BackChannelDelivery {
        let claims = Self.unverifiedClaims(of: logoutToken)
        let delivery = BackChannelDelivery(
            clientID: claims.flatMap { Self.audiences(of: $0).first } ?? "", uri: uri,
            sid: claims?["sid"]?.stringValue, sub: claims?["sub"]?.stringValue, logoutToken: logoutToken)
        return (try? await self.deliver(delivery, on: self.eventLoop).get()) ?? delivery
    }

    /// A logout token for every client that got tokens in the ended sessions, all sent at once.
    private func sendLogoutTokens(
        for sessions: [DemoOIDCState.Session], on eventLoop: EventLoop
    ) -> EventLoopFuture<[BackChannelDelivery]> {
        let clients = self.clientsBox.withLockedValue { $0 }
        var deliveries: [EventLoopFuture<BackChannelDelivery>] = []
        for session in sessions {
            for clientID in session.clientIDs {
                guard let uri = clients[clientID]?.backChannelLogoutURI,
                    let token = try? self.makeLogoutToken(clientID: clientID, sid: session.sid, sub: session.userID)
                else { continue }
                let delivery = BackChannelDelivery(
                    clientID: clientID, uri: uri, sid: session.sid, sub: session.userID, logoutToken: token)
                deliveries.append(self.deliver(delivery, on: eventLoop))
            }
        }
        return EventLoopFuture.whenAllSucceed(deliveries, on: eventLoop)
    }

    /// Sends `delivery`'s token; never fails (a failure is in the result's `failure`).
    private func deliver(
        _ delivery: BackChannelDelivery, on eventLoop: EventLoop
    )
        -> EventLoopFuture<BackChannelDelivery>
    {
        let tls = self.records.withLockedValue { $0.backChannelTLS }
        return BackChannelLogoutClient.post(
            logoutToken: delivery.logoutToken, to: delivery.uri, tls: tls, on: eventLoop
        )
        .map { status in
            var delivered = delivery
            delivered.status = status
            return delivered
        }
        .recover { error in
            var failed = delivery
            failed.failure = "\(error)"
            return failed
        }
        .map { delivered in
            self.records.withLockedValue { $0.deliveries.append(delivered) }
            return delivered
        }
    }

    static func json(_ delivery: BackChannelDelivery) -> JSONValue {
        var object: JSONObject = [
            "client_id": .string(delivery.clientID), "uri": .string(delivery.uri),
            "status": delivery.status.map { .number(JSONNumber($0)) } ?? .null,
        ]
        if let sid = delivery.sid { object["sid"] = .string(sid) }
        if let sub = delivery.sub { object["sub"] = .string(sub) }
        if let failure = delivery.failure { object["failure"] = .string(failure) }
        return .object(object)
    }

    static func audiences(of claims: JSONObject) -> [String] {
        switch claims["aud"] {
        case .string(let audience)?: return [audience]
        case .array(let values)?: return values.compactMap(\.stringValue)
        default: return []
        }
    }

    private static func unverifiedClaims(of token: String) -> JSONObject? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]) else { return nil }
        return (try? JSONValue(parsing: String(decoding: payload, as: UTF8.self)))?.objectValue
    }
}
