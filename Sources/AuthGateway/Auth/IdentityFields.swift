/// The one place rules read who the caller is and where the request comes from: `require`
/// (`RequirementCheck`), identity headers (`RequestPlanner`) and rate-limit keys (`RateLimiter`)
/// all name values as `claims.<path>`, `profile.<path>`, `dpop.jkt` or `client.ip`, and all
/// read them here, so the three always agree on what a name means (docs/configuration.md).
///
/// A view, not a copy: built per use from the identity and the request, nothing allocated.
struct IdentityFields {
    /// nil for an anonymous request.
    let identity: Identity?
    let request: AuthRequest

    /// The value `path` names; nil when the request has none (no identity, a missing claim, no
    /// profile, no DPoP proof).
    func value(_ path: IdentityValuePath) -> JSONValue? {
        switch path.source {
        case .claims:
            return self.identity.flatMap { IdentityLookup.value(named: path.name, in: $0.token.claims) }
        case .profile:
            return self.identity?.profile.flatMap { IdentityLookup.value(named: path.name, in: $0) }
        case .dpop:
            return self.identity?.dpopThumbprint.map(JSONValue.string)
        case .client:
            return .string(self.request.clientIP)
        }
    }

    /// `claims.<name>`: shorthand for rules that name a claim directly.
    func claim(_ name: String) -> JSONValue? {
        self.identity.flatMap { IdentityLookup.value(named: name, in: $0.token.claims) }
    }

    /// `profile.<name>`.
    func profileValue(_ name: String) -> JSONValue? {
        self.identity?.profile.flatMap { IdentityLookup.value(named: name, in: $0) }
    }
}
