import Foundation

/// The text `check --request` prints: one `label: value` line per stage, the requirement tree
/// indented by depth with each clause's result, and the refusal the gateway would answer.
struct RequestCheckReport {
    private(set) var text = ""

    mutating func line(_ label: String, _ value: String) {
        self.text += "\(label):".padding(toLength: 18, withPad: " ", startingAt: 0) + value + "\n"
    }

    mutating func refusal(_ error: GatewayError) {
        self.line("decision", "refused: \(error.status.code) \(error.errorType) (\(error.detail))")
    }

    mutating func requirements(_ explanation: RequirementExplanation, route: RouteConfiguration) {
        guard !explanation.entries.isEmpty else {
            self.line("requirements", "none")
            return
        }
        switch explanation.verdict {
        case .holds: self.line("requirements", "hold")
        case .fails(let clause): self.line("requirements", "fail at \(clause)")
        }
        for entry in explanation.entries {
            let result: String
            switch entry.result {
            case .holds: result = "holds "
            case .fails: result = "FAILS "
            case .notReached: result = "  -   "
            }
            let indent = String(repeating: "  ", count: entry.depth)
            self.text += "  \(result) \(indent)\(entry.path): \(entry.summary)\n"
        }
    }

    mutating func rateLimits(_ limits: [RateLimitConfiguration], fields: IdentityFields) {
        guard !limits.isEmpty else {
            self.line("rate limits", "none")
            return
        }
        self.line("rate limits", "\(limits.count)")
        for limit in limits {
            var counted: String
            switch limit.key {
            case .route: counted = "the route"
            case .clientIP: counted = "client.ip \(fields.request.clientIP)"
            case .claim(let name):
                counted = fields.claim(name).flatMap(RateLimiter.keyText).map { "\(limit.key) = \($0)" } ?? ""
            case .profile(let name):
                counted = fields.profileValue(name).flatMap(RateLimiter.keyText).map { "\(limit.key) = \($0)" } ?? ""
            }
            if counted.isEmpty { counted = "client.ip \(fields.request.clientIP) (no \(limit.key))" }
            let perSecond = limit.requestsPerSecond
            let rate = perSecond.rounded() == perSecond ? String(Int(perSecond)) : String(perSecond)
            self.text += "  \(limit.name): \(rate)/s, burst \(limit.burst), counted per \(counted)\n"
        }
    }

    mutating func identityHeaders(_ headers: HeaderFields) {
        guard !headers.isEmpty else {
            self.line("identity headers", "none")
            return
        }
        self.line("identity headers", "\(headers.count)")
        for header in headers { self.text += "  \(header.name): \(header.value)\n" }
    }
}
