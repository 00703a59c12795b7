/// What the walk of `RequirementCheck` tells whoever watches it. Generic, not an existential:
/// deciding uses `SilentRecorder`, whose empty methods the compiler removes, so the decision
/// pays nothing for the explanation.
protocol RequirementRecorder {
    associatedtype Line
    /// A requirement object is about to be walked; its line is ended with `end`.
    mutating func begin(_ requirement: Requirement) -> Line
    /// A clause is about to be walked; its line is ended with `end`.
    mutating func begin(_ clause: RequirementClause) -> Line
    mutating func end(_ line: Line, holds: Bool)
    /// Clauses the walk did not need: the answer was known before them.
    mutating func notReached(_ clauses: ArraySlice<RequirementClause>)
    /// Branches of `anyOf`/`allOf` the walk did not need.
    mutating func notReached(_ requirements: ArraySlice<Requirement>)
}

/// Deciding: records nothing.
struct SilentRecorder: RequirementRecorder {
    @inline(__always) mutating func begin(_ requirement: Requirement) {}
    @inline(__always) mutating func begin(_ clause: RequirementClause) {}
    @inline(__always) mutating func end(_ line: Void, holds: Bool) {}
    @inline(__always) mutating func notReached(_ clauses: ArraySlice<RequirementClause>) {}
    @inline(__always) mutating func notReached(_ requirements: ArraySlice<Requirement>) {}
}

/// Explaining: one entry per requirement object and clause, in tree order.
struct ExplainingRecorder: RequirementRecorder {
    private(set) var entries: [RequirementExplanation.Entry] = []
    private var depth = 0

    mutating func begin(_ requirement: Requirement) -> Int {
        self.open(
            path: requirement.path, summary: "all of \(RequirementClause.count(requirement.clauses.count, "clause"))")
    }

    mutating func begin(_ clause: RequirementClause) -> Int {
        self.open(path: clause.path, summary: clause.summary)
    }

    mutating func end(_ line: Int, holds: Bool) {
        self.entries[line].result = holds ? .holds : .fails
        self.depth -= 1
    }

    mutating func notReached(_ clauses: ArraySlice<RequirementClause>) {
        for clause in clauses {
            self.entries.append(
                .init(path: clause.path, depth: self.depth, summary: clause.summary, result: .notReached))
            self.depth += 1
            switch clause.kind {
            case .field: break
            case .anyOf(let requirements), .allOf(let requirements): self.notReached(requirements[...])
            case .not(let requirement): self.notReached(requirement.clauses[...])
            }
            self.depth -= 1
        }
    }

    mutating func notReached(_ requirements: ArraySlice<Requirement>) {
        for requirement in requirements {
            self.entries.append(
                .init(
                    path: requirement.path, depth: self.depth,
                    summary: "all of \(RequirementClause.count(requirement.clauses.count, "clause"))",
                    result: .notReached))
            self.depth += 1
            self.notReached(requirement.clauses[...])
            self.depth -= 1
        }
    }

    private mutating func open(path: String, summary: String) -> Int {
        self.entries.append(.init(path: path, depth: self.depth, summary: summary, result: .notReached))
        self.depth += 1
        return self.entries.count - 1
    }
}

/// `RequirementCheck.explain`'s answer: the decision and how it was reached.
struct RequirementExplanation: Equatable {
    struct Entry: Equatable {
        enum Result: Equatable {
            case holds, fails
            /// The walk stopped before it: the answer was known.
            case notReached
        }

        /// `routes[2].require.anyOf[1]["claims.groups"]`.
        let path: String
        /// 0 for the route's `require`, one more per level of the tree.
        let depth: Int
        /// The clause as configured (`claims.groups: "admin"`, `anyOf (2 requirements)`).
        let summary: String
        var result: Result
    }

    let verdict: RequirementVerdict
    /// Every requirement object and clause, parents before their children, in file order.
    let entries: [Entry]
}
