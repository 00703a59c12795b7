/// Identity for backends (docs/assertions.md): on a route with `assertion`, the verified caller
/// is signed for the route's audience by the gateway's current key, in `identityAssertion.header`
/// — whatever proved the caller (a JWT, an introspected token, an API key, a browser session,
/// a DPoP-bound token). A cached assertion is reused until 80 % of its life, so most requests pay
/// no signature (`AssertionSigner`). An anonymous request on such a route gets none, and a
/// client-sent header of that name never reaches a backend (`ForwardingPolicy`).
struct SignedAssertion: AuthenticationStep {
    /// nil without `identityAssertion`: the step stands aside.
    let signer: AssertionSigner?
    /// `check --request`: what would be signed is noted, not signed.
    let notes: StepNotes?

    init(_ context: StepContext) {
        self.signer = context.configuration.identityAssertion.map {
            AssertionSigner(configuration: $0, metrics: context.metrics)
        }
        self.notes = context.notes
    }

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard let signer = self.signer, let assertion = request.route.assertion, var identity = state.identity else {
            return .next
        }
        // A subject is what an assertion asserts: none, and there is nothing to sign for.
        guard let subject = identity.token.subject else { return .refuse(.tokenRejected(.missingClaim)) }
        let fields = IdentityFields(identity: identity, request: request)
        var claims = JSONObject()
        for claim in assertion.claims {
            if let value = fields.value(claim.path) { claims[claim.name] = value }
        }
        let expiresAt = identity.token.expiresAt
        let input = AssertionInput(
            subject: subject, audience: assertion.audience, authKind: Self.authKind(identity.kind),
            thumbprint: identity.dpopThumbprint, claims: claims,
            credentialExpiresAt: expiresAt.isFinite ? expiresAt : nil,
            scope: fields.claim("scope")?.stringValue,
            request: signer.configuration.format == .txnToken
                ? AssertionInput.RequestContext(
                    clientIP: request.clientIP, method: request.method.rawValue, path: request.target.path) : nil)
        if let notes = self.notes {
            notes.assertion = input
            return .next
        }
        identity.backendHeaders.append((signer.header, signer.assertion(for: input, now: request.now)))
        state.identity = identity
        return .next
    }

    static func authKind(_ kind: Identity.Kind) -> AssertionInput.AuthKind {
        switch kind {
        case .jwt: return .jwt
        case .introspection: return .introspection
        case .apiKey: return .apikey
        case .session: return .session
        }
    }
}
