import NIOCore

/// An ordered list of authentication steps, as a type: `NoSteps().then(a).then(b)` is
/// `Then<Then<NoSteps, A>, B>`, so the compiler knows every step of the pipeline and calls each
/// directly — no existential, no table of closures — while the list itself reads as the
/// registration it is (`AuthenticationSteps.make`).
protocol StepList {
    /// How many steps the list holds.
    static var count: Int { get }
    /// Runs the steps from index `start` (0-based) on, each adding to `state` in place: the
    /// first ones already ran when a step waited and the pipeline resumes after it.
    func run(_ state: inout AuthState, _ request: AuthRequest, from start: Int) -> StepProgress
}

/// How far a run of the list got.
enum StepProgress {
    /// Every step went on: the state is as the last one left it.
    case finished
    case refused(GatewayError, headers: HeaderFields)
    /// A step waits; once its answer arrives, the run goes on at `resumeAt`.
    case waiting(EventLoopFuture<StepResumption>, resumeAt: Int)
}

/// The empty list, where every pipeline starts.
struct NoSteps: StepList {
    static var count: Int { 0 }

    func run(_ state: inout AuthState, _ request: AuthRequest, from start: Int) -> StepProgress { .finished }
}

/// The steps of `previous`, then `step`.
struct Then<Previous: StepList, Step: AuthenticationStep>: StepList {
    let previous: Previous
    let step: Step

    static var count: Int { Previous.count + 1 }

    @inline(__always)
    func run(_ state: inout AuthState, _ request: AuthRequest, from start: Int) -> StepProgress {
        let index = Previous.count
        guard start <= index else { return .finished }
        if start < index {
            let progress = self.previous.run(&state, request, from: start)
            guard case .finished = progress else { return progress }
        }
        switch self.step.run(&state, request) {
        case .next: return .finished
        case .refuse(let error, let headers): return .refused(error, headers: headers)
        case .wait(let answer): return .waiting(answer, resumeAt: index + 1)
        }
    }
}

extension StepList {
    /// This list with `step` run after it: the registration line of a step.
    func then<Step: AuthenticationStep>(_ step: Step) -> Then<Self, Step> { Then(previous: self, step: step) }
}
