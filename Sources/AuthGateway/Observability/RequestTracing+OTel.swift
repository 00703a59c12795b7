import Logging
import OTel
import ServiceLifecycle
import Tracing

extension GatewayTracing {
    /// The tracer and the background service that batches and exports its spans (run it in the
    /// service group). swift-otel's own `OTEL_*` environment variables still apply on top.
    static func make(
        _ configuration: TracingConfiguration, metrics: ProcessMetrics, logger: Logger
    ) throws -> (GatewayTracing, any Service) {
        var otel = OTel.Configuration.default
        // swift-otel's own warnings go to the gateway's log; the spans it drops are counted.
        var diagnostics = logger
        diagnostics.handler = TraceDropCounter(wrapping: diagnostics.handler, metrics: metrics)
        otel.diagnosticLogger = .custom(diagnostics)
        otel.serviceName = configuration.serviceName
        otel.metrics.enabled = false
        otel.logs.enabled = false
        otel.traces.enabled = true
        // The gateway samples before a span exists (no span object for an unsampled request).
        otel.traces.sampler = .alwaysOn
        // The configured URL is the collector's base (docs/operations.md); swift-otel takes an
        // explicit endpoint as the signal's full URL.
        let base =
            configuration.otlpEndpoint.hasSuffix("/")
            ? String(configuration.otlpEndpoint.dropLast()) : configuration.otlpEndpoint
        otel.traces.otlpExporter.endpoint = base + "/v1/traces"
        otel.traces.otlpExporter.protocol = configuration.otlpProtocol == .json ? .httpJSON : .httpProtobuf
        otel.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        otel.propagators = [.traceContext]
        let (tracer, service) = try OTel.makeTracingBackend(configuration: otel)
        return (
            GatewayTracing(
                tracer: tracer, sampleRatio: configuration.sampleRatio, recordSubject: configuration.recordSubject),
            TraceExportService(group: service)
        )
    }
}

/// swift-otel's exporter, named and never reflected: its configuration takes the `OTEL_*`
/// environment, credentials in `OTEL_EXPORTER_OTLP_HEADERS` included, and swift-service-lifecycle
/// describes every service at `debug` level (docs/operations.md, "What is never logged").
struct TraceExportService: Service, CustomStringConvertible, CustomReflectable {
    let group: any Service

    func run() async throws { try await self.group.run() }

    var description: String { "TraceExportService" }
    var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}
