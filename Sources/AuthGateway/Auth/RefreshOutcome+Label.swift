extension RefreshOutcome {
    /// The outcome's name in `auth_gateway_refreshes_total{outcome}` and on the refresh span.
    var label: String {
        switch self {
        case .refreshed: return "refreshed"
        case .rejected: return "rejected"
        case .unavailable: return "unavailable"
        }
    }
}
