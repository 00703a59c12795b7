@testable import AuthGateway

/// Reading a step's answer in tests.
extension StepResult {
    /// The value that goes on, when the step answered at once with one.
    var next: Value? {
        if case .next(let value) = self { return value }
        return nil
    }

    /// The refusal, when the step refused at once.
    var refusal: (error: GatewayError, headers: [(name: String, value: String)])? {
        if case .refuse(let error, let headers) = self { return (error, headers) }
        return nil
    }

    var isWaiting: Bool {
        if case .wait = self { return true }
        return false
    }
}

extension RequirementCheck {
    /// The step's answer for `identity`, as an outcome.
    static func check(_ identity: Identity, request: AuthRequest) -> AuthOutcome {
        switch RequirementCheck().run(AuthState(identity: identity, keys: request.keys), request) {
        case .next(let state): return state.identity.map(AuthOutcome.authenticated) ?? .anonymous
        case .refuse(let error, let headers): return .rejected(error, headers: headers)
        case .wait: return .reject(.keysUnavailable)
        }
    }
}

extension AuthOutcome {
    /// The refusal's error, when refused.
    var refusal: GatewayError? {
        if case .rejected(let error, _) = self { return error }
        return nil
    }
}
