/// How a request got its outcome from a single flight (for the single-flight metrics).
enum SingleFlightRole: Sendable, Equatable {
    /// From the table, without a call.
    case remembered
    /// Waited for a call another request made.
    case joined
    /// Made the call.
    case led
}
