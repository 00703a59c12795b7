import NIOCore

/// Decides who a request is: runs the registered steps (`AuthenticationSteps`) in order, each
/// answering with the one step contract (`StepResult`), and turns the last state into an
/// outcome (docs/architecture.md, "Authentication: one step contract").
///
///     extract the credential → API key → browser session → JWT (→ refetch keys)
///     → refresh (bearer or session) → introspection → proof of possession (DPoP)
///     → profile → requirements;  then: a navigation refused for want of credentials signs in
///
/// What is synchronous stays so (a cached token on a route without profile needs no future);
/// a step that must wait hands back a future of its answer, and the run resumes after it on
/// the request's loop. One per event loop and configuration (`Worker`), never per request.
final class RequestAuthenticator {
    /// The list, run from an index on: one indirect call per request into code the compiler
    /// specialised for this list's steps.
    private let steps: (inout AuthState, AuthRequest, Int) -> StepProgress
    let signInRedirect: SignInRedirect?
    let eventLoop: EventLoop

    init<Steps: StepList>(steps: Steps, signInRedirect: SignInRedirect?, eventLoop: EventLoop) {
        self.steps = { state, request, start in steps.run(&state, request, from: start) }
        self.signInRedirect = signInRedirect
        self.eventLoop = eventLoop
    }

    /// The registered steps, built from `context`.
    convenience init(_ context: StepContext) {
        self.init(
            steps: AuthenticationSteps.make(context),
            signInRedirect: context.features.signIn.map { SignInRedirect(signIn: $0.browserSignIn) },
            eventLoop: context.eventLoop)
    }

    /// Runs the steps until authentication is over or must wait.
    func authenticate(_ request: AuthRequest) -> AuthDecision {
        var state = AuthState(keys: request.keys)
        switch self.resume(&state, request, at: 0) {
        case .done(let outcome): return .done(self.signInRedirect?.apply(outcome, request) ?? outcome)
        case .pending(let future):
            guard let redirect = self.signInRedirect else { return .pending(future) }
            return .pending(future.assumeIsolated().map { redirect.apply($0, request) }.nonisolated())
        }
    }

    private func resume(_ state: inout AuthState, _ request: AuthRequest, at start: Int) -> AuthDecision {
        switch self.steps(&state, request, start) {
        case .finished: return .done(Self.conclude(state))
        case .refused(let error, let headers): return .done(.rejected(error, headers: headers))
        case .waiting(let answer, let next): return .pending(self.waiting(answer, request, resumeAt: next))
        }
    }

    /// A waiting step's answer, adopted on the request's loop; the run goes on after the step
    /// with the state the step left.
    private func waiting(
        _ answer: EventLoopFuture<StepResumption>, _ request: AuthRequest, resumeAt next: Int
    ) -> EventLoopFuture<AuthOutcome> {
        let loop = self.eventLoop
        return answer.hop(to: loop).assumeIsolated().flatMap { resumption -> EventLoopFuture<AuthOutcome> in
            switch resumption.result {
            case .next:
                var state = resumption.state
                return self.resume(&state, request, at: next).future(on: loop)
            case .refuse(let error, let headers): return loop.makeSucceededFuture(.rejected(error, headers: headers))
            case .wait(let again): return self.waiting(again, request, resumeAt: next)
            }
        }.nonisolated()
    }

    /// Who the request is once every step went on: its verified identity; anonymous when it
    /// presented nothing (a route that required something refused already, at extraction);
    /// an expired token no step renewed is refused.
    static func conclude(_ state: AuthState) -> AuthOutcome {
        if let identity = state.identity { return .authenticated(identity) }
        if state.expired != nil { return .reject(.tokenRejected(.expired)) }
        guard case .none = state.credential else { return .reject(.tokenMissing) }
        return .anonymous
    }
}
