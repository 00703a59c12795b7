@testable import AuthGateway

/// A step's answer together with the state it left, for tests to read.
struct StepAnswer {
    let state: AuthState
    let result: StepResult

    /// The state that goes on, when the step answered at once that it does.
    var next: AuthState? {
        if case .next = self.result { return self.state }
        return nil
    }

    /// The refusal, when the step refused at once.
    var refusal: (error: GatewayError, headers: [(name: String, value: String)])? {
        if case .refuse(let error, let headers) = self.result { return (error, headers) }
        return nil
    }

    var isWaiting: Bool {
        if case .wait = self.result { return true }
        return false
    }
}

extension AuthenticationStep {
    /// Runs the step on a copy of `state`: its answer and the state it left.
    func run(_ state: AuthState, _ request: AuthRequest) -> StepAnswer {
        var state = state
        let result = self.run(&state, request)
        return StepAnswer(state: state, result: result)
    }
}

extension RequirementCheck {
    /// The step's answer for `identity`, as an outcome.
    static func check(_ identity: Identity, request: AuthRequest) -> AuthOutcome {
        let answer = RequirementCheck().run(AuthState(identity: identity, keys: request.keys), request)
        switch answer.result {
        case .next: return answer.state.identity.map(AuthOutcome.authenticated) ?? .anonymous
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
