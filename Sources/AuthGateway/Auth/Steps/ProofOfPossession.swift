import Crypto
import NIOCore

/// Proof of possession for DPoP-bound tokens (docs/authentication.md, "DPoP", RFC 9449): a
/// token whose claims carry `cnf.jkt` must come with the DPoP scheme and exactly one valid
/// proof by that key. `required` routes refuse unbound tokens; `off` routes skip all of it.
struct ProofOfPossession: AuthenticationStep {
    enum Outcome {
        case accepted(Identity)
        case refused(GatewayError, headers: HeaderFields)
        /// The proof is good here; the shared replay cache (other instances) has the last word.
        case pending(EventLoopFuture<Result<Identity, GatewayError>>)
    }

    let configuration: DPoPConfiguration
    /// `algs` of the DPoP challenges: the accepted proof algorithms.
    let algorithms: String
    /// The process's replay cache of proof `jti`s.
    let replay: ReplayCache
    /// With `sharedState`: the replay check across instances, behind `replay`.
    let sharedReplay: SharedDPoPReplay?
    /// The process's `DPoP-Nonce` key (used when `tokens.dpop.nonce` is on).
    let nonceKey: SymmetricKey
    let eventLoop: EventLoop
    /// How a proof's `htu` path is made canonical (`paths`): as the request's was.
    let paths: PathSettings

    init(_ context: StepContext) {
        self.init(
            configuration: context.configuration.tokens.dpop, replay: context.state.dpopReplay,
            sharedReplay: context.state.sharedDPoPReplay, nonceKey: context.state.dpopNonceKey,
            eventLoop: context.eventLoop, paths: context.configuration.paths)
    }

    /// Every verified caller but an API key's (a key is no token a proof could be bound to).
    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard let identity = state.identity, identity.kind != .apiKey else { return .next }
        switch self.check(identity, request) {
        case .accepted(let identity):
            state.identity = identity
            return .next
        case .refused(let error, let headers):
            return .refuse(error, headers: headers)
        case .pending(let checked):
            return .identity(after: checked, resuming: state, on: self.eventLoop)
        }
    }

    init(
        configuration: DPoPConfiguration, replay: ReplayCache, sharedReplay: SharedDPoPReplay?,
        nonceKey: SymmetricKey, eventLoop: EventLoop, paths: PathSettings = PathSettings()
    ) {
        self.paths = paths
        self.configuration = configuration
        self.algorithms = configuration.algorithms.map(\.rawValue).joined(separator: " ")
        self.replay = replay
        self.sharedReplay = sharedReplay
        self.nonceKey = nonceKey
        self.eventLoop = eventLoop
    }

    func check(_ identity: Identity, _ request: AuthRequest) -> Outcome {
        let mode = request.route.dpop
        guard mode != .off else { return .accepted(identity) }
        let presented = identity.accessToken
        guard let boundKey = identity.token.confirmationThumbprint else {
            if mode == .required { return self.refuse(.dpopRequired(algs: self.algorithms)) }
            // RFC 9449 §7.2: the DPoP scheme is for bound tokens only.
            if presented.dpopScheme { return self.refuse(self.invalid("the access token is not DPoP-bound")) }
            return .accepted(identity)
        }
        // A bound token as Bearer, raw or a cookie is refused like one without a proof.
        guard presented.dpopScheme else { return self.refuse(.dpopRequired(algs: self.algorithms)) }
        var proof: Substring?
        var proofs = 0
        for (name, value) in request.headers where ASCII.equalsIgnoringCase(name, "dpop") {
            proofs += 1
            proof = value[...]
        }
        guard proofs > 0, let proof else { return self.refuse(.dpopRequired(algs: self.algorithms)) }
        guard proofs == 1 else { return self.refuse(self.invalid("more than one DPoP header")) }
        let target = DPoPProof.Request(
            method: request.method.rawValue,
            url: DPoPTarget.expected(base: self.base(request), canonicalPath: request.target.path),
            accessToken: presented.value, now: request.now, paths: self.paths
        )
        switch DPoPProof.verify(ASCII.trimmingOWS(proof), for: target, configuration: self.configuration) {
        case .failure(let failure):
            return self.refuse(self.invalid(failure.check))
        case .success(let verified):
            guard verified.thumbprint == boundKey else { return self.refuse(self.invalid("jkt")) }
            var identity = identity
            identity.dpopThumbprint = verified.thumbprint
            // The server nonce (RFC 9449 §8), before the jti is used up: the client answers a
            // refusal with a new proof anyway.
            if self.configuration.nonce {
                switch self.nonceVerdict(verified.nonce, now: request.now) {
                case .invalid:
                    let nonce = DPoPNonce.issue(key: self.nonceKey, now: request.now)
                    return .refused(.dpopUseNonce(algs: self.algorithms), headers: [("DPoP-Nonce", nonce)])
                case .renew:
                    identity.responseHeaders.append(
                        ("DPoP-Nonce", DPoPNonce.issue(key: self.nonceKey, now: request.now)))
                case .fresh:
                    break
                }
            }
            return self.useUp(verified, identity: identity, now: request.now)
        }
    }

    /// Last, so that a proof failing another check does not use up its jti.
    private func useUp(_ verified: DPoPVerifiedProof, identity: Identity, now: Double) -> Outcome {
        let usableUntil =
            verified.issuedAt + Double(self.configuration.maxAgeSeconds + self.configuration.leewaySeconds)
        let replayed = self.invalid("jti was used before")
        guard self.replay.firstUse(of: verified, until: usableUntil, now: now) else { return self.refuse(replayed) }
        // Seen here for the first time: with `sharedState`, the other instances may have seen
        // it (the row outlives the window by the leeway, for clocks that differ).
        let keepSeconds = usableUntil - now + Double(self.configuration.leewaySeconds)
        if let shared = self.sharedReplay,
            let firstUse = shared.firstUse(
                ReplayCache.digest(of: verified), keepSeconds: keepSeconds, on: self.eventLoop)
        {
            return .pending(firstUse.map { first in first ? .success(identity) : .failure(replayed) })
        }
        return .accepted(identity)
    }

    private func nonceVerdict(_ nonce: String?, now: Double) -> DPoPNonce.Verdict {
        guard let nonce else { return .invalid }
        return DPoPNonce.check(
            nonce, key: self.nonceKey, now: now, lifetimeSeconds: Double(self.configuration.maxAgeSeconds),
            leewaySeconds: Double(self.configuration.leewaySeconds))
    }

    private func refuse(_ error: GatewayError) -> Outcome { .refused(error, headers: []) }

    private func invalid(_ check: String) -> GatewayError { .dpopInvalidProof(check, algs: self.algorithms) }

    /// `scheme://authority` as the client saw it: `publicBaseURL`, else the trusted proxy's
    /// `X-Forwarded-Proto`/`-Host`, else the listener's scheme and `Host` (`:authority`).
    private func base(_ request: AuthRequest) -> String {
        if let base = self.configuration.publicBaseURL { return base }
        var scheme = request.isTLS ? "https" : "http"
        var authority = request.target.host?.authority ?? ""
        if request.connection.peerIsTrustedProxy {
            if let proto = request.headers.first(name: "x-forwarded-proto")?.split(separator: ",").first {
                scheme = String(ASCII.trimmingOWS(proto))
            }
            if let host = request.headers.first(name: "x-forwarded-host")?.split(separator: ",").first {
                authority = String(ASCII.trimmingOWS(host))
            }
        }
        // A base no proof can name (a forwarded host that is no host): every `htu` differs.
        return DPoPTarget.normalizedBase(scheme: scheme, authority: authority) ?? "invalid:"
    }
}
