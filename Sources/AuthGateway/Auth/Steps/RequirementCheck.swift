/// The route's `require` (docs/policies.md): the requirements step of the authentication
/// pipeline, and the only code that decides a requirement.
///
/// A pure function over an identity and a request, read through `IdentityFields`: no I/O,
/// nothing remembered. Proxy mode, authorizer mode and `check --request` all come here. One walk
/// serves two uses: `evaluate` decides (with a recorder that records nothing, specialised
/// away), `explain` runs the very same walk with a recorder that notes each clause's path and
/// result, so what `check --request` prints is what the gateway decides.
///
/// The walk goes in file order and stops where the answer is known: the first failing clause
/// of an object or `allOf`, the first holding branch of an `anyOf`. A refusal names the first
/// failing clause by the JSON path the loader stored in it — a field, a `not` whose
/// requirement held, or an `anyOf` all of whose branches failed — never a value. Deciding
/// allocates nothing.
struct RequirementCheck: AuthenticationStep {
    /// `check --request`'s notes: the explanation of each decision goes there.
    var notes: StepNotes? = nil

    init() {}

    init(_ context: StepContext) { self.notes = context.notes }

    /// The step: a verified caller goes on when the route's requirement holds, else 403 (with
    /// what the caller must get anyway: a refresh's new tokens). An anonymous request is not
    /// checked.
    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        // Most routes have no `require`: they pay nothing here, not even the view's copies.
        let requirement = request.route.require
        guard !requirement.isEmpty, let identity = state.identity else { return .next }
        if let notes = self.notes {
            notes.requirements = Self.explain(requirement, IdentityFields(identity: identity, request: request))
        }
        switch Self.evaluate(requirement, IdentityFields(identity: identity, request: request)) {
        case .holds:
            return .next
        case .fails(let clause):
            return .refuse(.forbidden(clause), headers: identity.responseHeaders)
        }
    }

    /// Whether `requirement` holds for the request `fields` reads.
    static func evaluate(_ requirement: Requirement, _ fields: IdentityFields) -> RequirementVerdict {
        guard !requirement.isEmpty else { return .holds }
        var recorder = SilentRecorder()
        guard let failing = Self.walk(requirement, fields, &recorder) else { return .holds }
        return .fails(clause: failing)
    }

    /// The same decision, with every requirement and clause the walk met (and those it did not
    /// need) in tree order: for `check --request`.
    static func explain(_ requirement: Requirement, _ fields: IdentityFields) -> RequirementExplanation {
        var recorder = ExplainingRecorder()
        let failing = Self.walk(requirement, fields, &recorder)
        return RequirementExplanation(
            verdict: failing.map { .fails(clause: $0) } ?? .holds, entries: recorder.entries)
    }

    // MARK: The walk

    /// nil when `requirement` holds, else the path of its first failing clause. `entry`:
    /// whether the object is a line of the explanation of its own (the root and the elements
    /// of `anyOf`/`allOf`; a `not`'s object is its clause's line).
    static func walk<Recorder: RequirementRecorder>(
        _ requirement: Requirement, _ fields: IdentityFields, _ recorder: inout Recorder, entry: Bool = true
    ) -> String? {
        let line = entry ? recorder.begin(requirement) : nil
        var failing: String?
        for index in requirement.unretainedClauses.indices {
            // Borrowed, not retained: `requirement` owns its clauses for the whole walk.
            failing = requirement.unretainedClauses[index]._withUnsafeGuaranteedRef {
                Self.walk($0, fields, &recorder)
            }
            if failing != nil {
                recorder.notReached(requirement.clauses[(index + 1)...])
                break
            }
        }
        if let line { recorder.end(line, holds: failing == nil) }
        return failing
    }

    /// nil when `clause` holds, else the path of the first failing clause within it.
    static func walk<Recorder: RequirementRecorder>(
        _ clause: RequirementClause, _ fields: IdentityFields, _ recorder: inout Recorder
    ) -> String? {
        let line = recorder.begin(clause)
        let failing: String?
        switch clause.kind {
        case .field:
            // Through the clause's `fieldTest`, borrowed: no copy of the enum's payload, no
            // retain of the test.
            let test = clause.unretainedFieldTest.unsafelyUnwrapped
            let holds = test._withUnsafeGuaranteedRef { $0.holds(for: fields) }
            failing = holds ? nil : clause.path
        case .allOf(let requirements):
            failing = Self.firstFailure(of: requirements, fields, &recorder)
        case .anyOf(let requirements):
            failing = Self.anyHolds(requirements, fields, &recorder) ? nil : clause.path
        case .not(let requirement):
            failing = Self.walk(requirement, fields, &recorder, entry: false) == nil ? clause.path : nil
        }
        recorder.end(line, holds: failing == nil)
        return failing
    }

    private static func firstFailure<Recorder: RequirementRecorder>(
        of requirements: [Requirement], _ fields: IdentityFields, _ recorder: inout Recorder
    ) -> String? {
        for index in requirements.indices {
            if let failing = Self.walk(requirements[index], fields, &recorder) {
                recorder.notReached(requirements[(index + 1)...])
                return failing
            }
        }
        return nil
    }

    private static func anyHolds<Recorder: RequirementRecorder>(
        _ requirements: [Requirement], _ fields: IdentityFields, _ recorder: inout Recorder
    ) -> Bool {
        for index in requirements.indices where Self.walk(requirements[index], fields, &recorder) == nil {
            recorder.notReached(requirements[(index + 1)...])
            return true
        }
        return false
    }
}

/// A requirement's answer for one request.
enum RequirementVerdict: Equatable {
    case holds
    /// `clause`: the JSON path of the first failing clause, as the 403 names it.
    case fails(clause: String)
}
