import NIOCore

/// What every authentication step answers (docs/architecture.md, "Authentication: one step
/// contract"): go on, refuse, or wait. A step reads the state the steps before it left and adds
/// to it in place (`inout`), so a step with nothing to do costs nothing: no copy of the state is
/// made on the way through the list (each copy retained every reference the state holds, eleven
/// steps over — measured in docs/benchmarks.md). One type for every step, so the pipeline runs
/// any list of them without knowing what each one is.
enum StepResult: Sendable {
    /// Go on with the state as this step left it.
    case next
    /// Refused: the request gets `error`, with `headers` on the answer (a cleared cookie after a
    /// sign-out, a fresh `DPoP-Nonce`).
    case refuse(GatewayError, headers: HeaderFields = [])
    /// Wait for the auth service, an endpoint, a key refetch or the shared state. The future
    /// completes on the request's loop (`after`) with the state the step leaves and its answer
    /// then (which may be to wait again).
    case wait(EventLoopFuture<StepResumption>)
}

/// A waiting step's answer once it arrived: the state it leaves, and what it answers now.
struct StepResumption: Sendable {
    var state: AuthState
    var result: StepResult
}

/// One way in, or one check, of the authentication pipeline: a type in `Auth/Steps/`,
/// registered by one line in `AuthenticationSteps.make` (docs/architecture.md, "How to add a
/// way in"). A step reads the state the steps before it left and adds to it; a step with nothing
/// to do for this request answers `.next` and leaves the state as it came.
protocol AuthenticationStep {
    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult
}

extension StepResult {
    /// Waits for `future`, then goes on on `eventLoop` — the request's: steps keep per-loop memos
    /// that only their loop may touch. `resume` gets the waited value and `state` (the state as
    /// the step left it when it waited) to add to, and answers as a step does.
    static func after<Waited: Sendable>(
        _ future: EventLoopFuture<Waited>, on eventLoop: EventLoop, resuming state: AuthState,
        _ resume: @escaping (Waited, inout AuthState) -> StepResult
    ) -> StepResult {
        .wait(
            future.hop(to: eventLoop).assumeIsolated().map { waited in
                var state = state
                let result = resume(waited, &state)
                return StepResumption(state: state, result: result)
            }.nonisolated())
    }

    /// Waits for a step's new identity of the caller: `state` with it, or the step's refusal.
    static func identity(
        after future: EventLoopFuture<Result<Identity, GatewayError>>, resuming state: AuthState,
        on eventLoop: EventLoop
    ) -> StepResult {
        .after(future, on: eventLoop, resuming: state) { result, state in
            switch result {
            case .success(let identity):
                state.identity = identity
                return .next
            case .failure(let error):
                return .refuse(error)
            }
        }
    }
}
