import Logging

/// swift-otel's diagnostic log handler: everything goes on to the gateway's own handler, and
/// the spans swift-otel drops are counted in `auth_gateway_trace_spans_dropped_total{reason}`
/// — a batch whose export failed (collector down or refusing: `export_failed`) and spans that
/// found the queue full (`queue_full`). swift-otel keeps those counts internal and only logs
/// them, so the two warnings are recognised by their text; `TracingTests` checks the counter
/// against a dead collector, so a change of wording in swift-otel fails a test instead of
/// silently counting nothing. The warnings are counted whatever the gateway's log level (the
/// handler admits `.warning` at least); only what that level admits goes on to be logged.
struct TraceDropCounter: LogHandler {
    static let exportFailed = "Failed to export batch."
    static let queueFull = "Spans were dropped this iteration because queue was full"

    private var wrapped: any LogHandler
    private let metrics: ProcessMetrics

    init(wrapping wrapped: any LogHandler, metrics: ProcessMetrics) {
        self.wrapped = wrapped
        self.metrics = metrics
    }

    func log(event: LogEvent) {
        let message = event.message.description
        if message == Self.exportFailed {
            self.count(.exportFailed, event, key: "batch_size")
        } else if message == Self.queueFull {
            self.count(.queueFull, event, key: "dropped_count")
        }
        if event.level >= self.wrapped.logLevel { self.wrapped.log(event: event) }
    }

    private func count(_ reason: TraceDropReason, _ event: LogEvent, key: String) {
        let value = event.metadata?[key] ?? self.wrapped.metadata[key]
        let spans = value.flatMap { UInt64("\($0)") } ?? 1
        self.metrics.increment(.traceSpansDropped(reason), by: spans)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.wrapped[metadataKey: key] }
        set { self.wrapped[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { self.wrapped.metadata }
        set { self.wrapped.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { min(self.wrapped.logLevel, .warning) }
        set { self.wrapped.logLevel = newValue }
    }
}
