extension ConfigurationLoader {
    /// `tracing` (docs/operations.md): off when absent.
    static func tracing(_ root: ConfigReader) -> TracingConfiguration? {
        guard let section = root.object("tracing") else { return nil }
        defer { section.finish() }
        guard let endpoint = section.requiredString("otlpEndpoint") else { return nil }
        switch UpstreamURL.parse(endpoint) {
        case .success(let url) where url.pathAndQuery.isEmpty || url.pathAndQuery == "/":
            break
        case .success:
            section.error("otlpEndpoint", "\"\(endpoint)\": give the collector's base URL (/v1/traces is added)")
        case .failure(let reason):
            section.error("otlpEndpoint", "\"\(endpoint)\" \(reason)")
        }
        var tracing = TracingConfiguration(otlpEndpoint: endpoint)
        if let name = section.nonEmptyString("serviceName") { tracing.serviceName = name }
        tracing.sampleRatio = section.number("sampleRatio", in: 0...1) ?? tracing.sampleRatio
        tracing.recordSubject = section.bool("recordSubject") ?? tracing.recordSubject
        if let text = section.string("otlpProtocol") {
            if let value = TracingConfiguration.OTLPProtocol(rawValue: text) {
                tracing.otlpProtocol = value
            } else {
                section.error("otlpProtocol", "must be \"http/protobuf\" or \"http/json\", not \"\(text)\"")
            }
        }
        return tracing
    }
}
