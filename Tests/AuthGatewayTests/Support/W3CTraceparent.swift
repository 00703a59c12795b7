/// A `traceparent` header of version 00 (W3C Trace Context §3.2), read with a regular
/// expression written from the recommendation, never with the product's parser:
/// `00-<32 lower-hex trace-id>-<16 lower-hex parent-id>-<2 lower-hex flags>`, neither id all
/// zeros.
struct W3CTraceparent: Equatable, Sendable {
    var traceID: String
    var parentID: String
    var flags: String

    init?(_ text: String) {
        guard let match = text.wholeMatch(of: /00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/) else { return nil }
        let (_, traceID, parentID, flags) = match.output
        guard traceID != String(repeating: "0", count: 32), parentID != String(repeating: "0", count: 16) else {
            return nil
        }
        self.traceID = String(traceID)
        self.parentID = String(parentID)
        self.flags = String(flags)
    }

    /// Bit 0 of the flags: the caller recorded (sampled) the trace.
    var sampled: Bool { (Int(self.flags, radix: 16) ?? 0) & 1 == 1 }
}
