/// The route's `require` (docs/configuration.md, "Routes"): every entry must hold for the
/// identity, as `IdentityFields` reads it. A pure function: no I/O, nothing remembered.
enum RequirementCheck {
    static func check(_ identity: Identity, request: AuthRequest) -> AuthOutcome {
        let fields = IdentityFields(identity: identity, request: request)
        for requirement in request.route.require {
            let actual = fields.value(requirement.path)
            guard IdentityLookup.satisfies(actual, expected: requirement.expected, name: requirement.path.name) else {
                return .rejected(.forbidden(requirement.path.description), headers: identity.responseHeaders)
            }
        }
        return .authenticated(identity)
    }
}
