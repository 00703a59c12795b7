import NIOCore

/// What every authentication step answers (docs/architecture.md, "Authentication: one step
/// contract"): go on with a value, refuse, or wait on a future of the same answer. One type for
/// every step, so the pipeline runs any list of them without knowing what each one is.
enum StepResult<Value> {
    /// Go on with this value (the next step gets it).
    case next(Value)
    /// Refused: the request gets `error`, with `headers` on the answer (a cleared cookie after a
    /// sign-out, a fresh `DPoP-Nonce`).
    case refuse(GatewayError, headers: HeaderFields = [])
    /// Wait for the auth service, an endpoint, a key refetch or the shared state. The future
    /// completes on the request's loop (`after`), with the step's answer.
    case wait(EventLoopFuture<StepResult<Value>>)
}

extension StepResult {
    /// Waits for `future`, then answers with `next` of its value on `eventLoop` — the request's:
    /// steps keep per-loop memos that only their loop may touch.
    static func after<Waited: Sendable>(
        _ future: EventLoopFuture<Waited>, on eventLoop: EventLoop, _ next: @escaping (Waited) -> StepResult<Value>
    ) -> StepResult<Value> {
        .wait(future.hop(to: eventLoop).assumeIsolated().map(next).nonisolated())
    }

    /// The same answer about another value: `transform` applied to what goes on.
    func map<Other>(_ transform: @escaping (Value) -> Other) -> StepResult<Other> {
        switch self {
        case .next(let value): return .next(transform(value))
        case .refuse(let error, let headers): return .refuse(error, headers: headers)
        case .wait(let future):
            return .wait(future.assumeIsolated().map { $0.map(transform) }.nonisolated())
        }
    }
}

extension StepResult: Sendable where Value: Sendable {}

/// One way in, or one check, of the authentication pipeline: a type in `Auth/Steps/`,
/// registered by one line in `AuthenticationSteps.make` (docs/architecture.md, "How to add a
/// way in"). A step reads the state the steps before it left and answers with the next one; a
/// step with nothing to do for this request hands the state on as it came.
protocol AuthenticationStep {
    func run(_ state: AuthState, _ request: AuthRequest) -> StepResult<AuthState>
}

extension StepResult where Value == AuthState {
    /// Waits for a step's new identity of the caller: `state` with it, or the step's refusal.
    static func identity(
        after future: EventLoopFuture<Result<Identity, GatewayError>>, in state: AuthState, on eventLoop: EventLoop
    ) -> StepResult<AuthState> {
        .after(future, on: eventLoop) { result in
            switch result {
            case .success(let identity): return .next(state.with(identity))
            case .failure(let error): return .refuse(error)
            }
        }
    }
}
