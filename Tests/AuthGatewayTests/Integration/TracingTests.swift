import Foundation
import NIOConcurrencyHelpers
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// OpenTelemetry tracing (docs/operations.md) against a scripted OTLP/HTTP collector on loopback
/// (OTLP/JSON, so the test reads the spans it receives).
@Suite("Tracing: OTLP/HTTP export and W3C trace context (real sockets)", .awaitsCleanups)
struct TracingTests {
    struct Span: Equatable {
        var traceID: String
        var spanID: String
        var parentSpanID: String
        var name: String
        var kind: Int
        var attributes: [String: String]
    }

    /// OTLP/JSON ids are hex; base64 is accepted too.
    static func hexID(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "" }
        if text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) { return text }
        guard let data = Data(base64Encoded: text) else { return text }
        return data.map { String(format: "%02x", $0) }.joined()
    }

    /// Every span the collector received so far.
    static func spans(_ collector: ScriptedAuthService) -> [Span] {
        var spans: [Span] = []
        for request in collector.requests where request.path == "/v1/traces" {
            guard let document = request.json else { continue }
            for resource in document["resourceSpans"]?.arrayValue ?? [] {
                for scope in resource["scopeSpans"]?.arrayValue ?? [] {
                    for span in scope["spans"]?.arrayValue ?? [] {
                        var attributes: [String: String] = [:]
                        for attribute in span["attributes"]?.arrayValue ?? [] {
                            guard let key = attribute["key"]?.stringValue, let value = attribute["value"]?.objectValue
                            else { continue }
                            attributes[key] = value.entries.first.map { entry in
                                entry.value.stringValue ?? entry.value.jsonText
                            }
                        }
                        spans.append(
                            Span(
                                traceID: Self.hexID(span["traceId"]?.stringValue),
                                spanID: Self.hexID(span["spanId"]?.stringValue),
                                parentSpanID: Self.hexID(span["parentSpanId"]?.stringValue),
                                name: span["name"]?.stringValue ?? "",
                                kind: span["kind"]?.numberValue?.exactInt
                                    ?? (span["kind"]?.stringValue == "SPAN_KIND_SERVER"
                                        ? 2 : span["kind"]?.stringValue == "SPAN_KIND_CLIENT" ? 3 : 0),
                                attributes: attributes
                            )
                        )
                    }
                }
            }
        }
        return spans
    }

    /// A `traceparent` of version 00 as W3C Trace Context §3.2 writes it, parsed here and not
    /// by the product's parser: `00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>`,
    /// lower-case hex, ids not all zeros.
    static func parseTraceparent(_ text: String) -> (traceID: String, parentID: String, flags: String)? {
        let fields = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        func isLowerHex(_ field: String, count: Int) -> Bool {
            field.utf8.count == count
                && field.utf8.allSatisfy {
                    ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                        || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
                }
        }
        guard fields.count == 4, fields[0] == "00", isLowerHex(fields[1], count: 32), isLowerHex(fields[2], count: 16),
            isLowerHex(fields[3], count: 2),
            fields[1] != String(repeating: "0", count: 32), fields[2] != String(repeating: "0", count: 16)
        else { return nil }
        return (fields[1], fields[2], fields[3])
    }

    static func collector() async throws -> ScriptedAuthService {
        try await ScriptedAuthService.start { _ in .json(.ok, [:]) }
    }

    static func gateway(
        collector: String, ratio: Double = 1, configure: (inout JSONObject) -> Void = { _ in }
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["tracing"] = [
                "otlpEndpoint": .string(collector), "otlpProtocol": "http/json",
                "sampleRatio": .number(JSONNumber(text: String(ratio), double: ratio)),
            ]
            configure(&config)
        }
    }

    @Test func aClientTraceIsContinuedWithChildSpansAndPropagatedToTheBackend() async throws {
        let collector = try await Self.collector()
        atTestEnd { await collector.stop() }
        let gateway = try await Self.gateway(collector: collector.baseURL)
        atTestEnd { await gateway.stop() }
        // swift-otel drops a batch whose export has not finished in 30 s, and its HTTP client
        // runs on the process-wide event loops, which the whole suite at once can starve that
        // long (seen once in a full run: "Failed to export batch", TimeoutError). A trace whose
        // spans never arrive is sent again, as a new trace with a new token, at most three times;
        // the attempt whose spans arrive is checked in full, and the last is checked regardless.
        for attempt in 1...3 {
            let traceID = "4bf92f3577b34da6a3ce929d0e0e473\(attempt)"
            let parentID = "00f067aa0ba902b7"
            let token = TestKeys.token(subject: "tracy-\(attempt)")
            let response = try await gateway.send(
                .get("/traced", token: token, headers: [("traceparent", "00-\(traceID)-\(parentID)-01")]))
            #expect(response.status == 200)
            // The backend sees the same trace, with the gateway's upstream span as its parent.
            let header = try #require(response.echoedHeader("traceparent").first)
            let forwarded = try #require(Self.parseTraceparent(header), "not a W3C traceparent: \(header)")
            #expect(forwarded.traceID == traceID)
            #expect(forwarded.parentID != parentID)
            #expect(forwarded.flags == "01", "sampled")

            let arrived = await eventually { Self.spans(collector).filter { $0.traceID == traceID }.count >= 3 }
            guard arrived || attempt == 3 else { continue }
            let spans = Self.spans(collector).filter { $0.traceID == traceID }
            let server = try #require(spans.first { $0.kind == 2 })
            #expect(server.parentSpanID == parentID)
            #expect(server.attributes["http.route"] == "default")
            #expect(server.attributes["http.response.status_code"] == "200")
            #expect(server.attributes["auth.outcome"] == "ok")
            #expect(server.attributes["enduser.id"] == nil)
            let upstream = try #require(spans.first { $0.name == "upstream api" })
            #expect(upstream.parentSpanID == server.spanID)
            #expect(upstream.spanID == forwarded.parentID)
            // First sighting of the token: its signature was checked, in a span of its own.
            let verify = try #require(spans.first { $0.name == "auth.verify" })
            #expect(verify.parentSpanID == server.spanID)
            // Every span exported continues one of the client's traces: none started anew.
            #expect(Self.spans(collector).allSatisfy { $0.traceID.hasPrefix("4bf92f3577b34da6a3ce929d0e0e473") })
            // No token anywhere in what was exported.
            let exported = collector.requests.map(\.bodyText).joined()
            #expect(!exported.contains(token.split(separator: ".")[2]))
            return
        }
    }

    /// No `traceparent` from the client: the gateway starts a trace (sampled at ratio 1), hands
    /// the backend a valid `traceparent` of it — read with a regular expression from the W3C
    /// recommendation, not the product's parser — and exports a root server span of that
    /// trace. Two requests, two traces.
    @Test func aNewTraceIsStartedWhenNoTraceparentArrives() async throws {
        let collector = try await Self.collector()
        atTestEnd { await collector.stop() }
        let gateway = try await Self.gateway(collector: collector.baseURL)
        atTestEnd { await gateway.stop() }
        var forwarded: [W3CTraceparent] = []
        for index in 0..<2 {
            let response = try await gateway.send(.get("/untraced/\(index)", token: TestKeys.token()))
            #expect(response.status == 200)
            #expect(response.echoedHeader("traceparent").count == 1)
            let header = try #require(response.echoedHeader("traceparent").first, "the backend got no traceparent")
            let parsed = try #require(W3CTraceparent(header), "not a W3C traceparent: \(header)")
            #expect(parsed.sampled, "sampleRatio 1 records every new trace")
            #expect(response.echoedHeader("tracestate").isEmpty, "no tracestate was invented")
            forwarded.append(parsed)
        }
        #expect(forwarded[0].traceID != forwarded[1].traceID)

        // Both traces' server spans and the upstream spans the backend was handed, exported.
        try await poll {
            let spans = Self.spans(collector)
            return forwarded.allSatisfy { trace in
                spans.contains { $0.kind == 2 && $0.traceID == trace.traceID }
                    && spans.contains { $0.spanID == trace.parentID }
            }
        }
        for trace in forwarded {
            let server = try #require(
                Self.spans(collector).first { $0.kind == 2 && $0.traceID == trace.traceID },
                "no server span of \(trace.traceID)")
            #expect(server.parentSpanID.isEmpty, "a new trace's server span is a root span")
            // The backend's parent is the gateway's upstream span, a child of that server span.
            let upstream = try #require(Self.spans(collector).first { $0.spanID == trace.parentID })
            #expect(upstream.parentSpanID == server.spanID)
        }
    }

    /// With tracing on, the client's `tracestate` goes on to the backend unchanged beside the
    /// continued `traceparent` (W3C Trace Context §3.3: a vendor that adds no entry of its own
    /// passes the list on as it came).
    @Test func tracestateIsCarriedOnWithTracing() async throws {
        let collector = try await Self.collector()
        atTestEnd { await collector.stop() }
        let gateway = try await Self.gateway(collector: collector.baseURL)
        atTestEnd { await gateway.stop() }
        let traceID = "5bf92f3577b34da6a3ce929d0e0e4736"
        let tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
        let response = try await gateway.send(
            .get(
                "/stateful", token: TestKeys.token(),
                headers: [("traceparent", "00-\(traceID)-00f067aa0ba902b7-01"), ("tracestate", tracestate)])
        )
        #expect(response.status == 200)
        let header = try #require(response.echoedHeader("traceparent").first)
        #expect(W3CTraceparent(header)?.traceID == traceID)
        // The same list-members in the same order; the whitespace around "," is optional
        // (OWS, §3.3.1), so it is not compared.
        let members = response.echoedHeader("tracestate").flatMap {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " \t")) }
        }
        #expect(members == ["congo=t61rcWkgMzE", "rojo=00f067aa0ba902b7"], "\(response.echoedHeader("tracestate"))")
    }

    @Test func withoutTracingATraceparentIsForwardedUnchanged() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let response = try await gateway.send(
            .get(
                "/plain", token: TestKeys.token(), headers: [("traceparent", traceparent), ("tracestate", "vendor=1")]))
        #expect(response.echoedHeader("traceparent") == [traceparent])
        #expect(response.echoedHeader("tracestate") == ["vendor=1"])
    }

    @Test func aRatioOfZeroRecordsNothingAndADeadCollectorChangesNoResponse() async throws {
        let collector = try await Self.collector()
        atTestEnd { await collector.stop() }
        let unsampled = try await Self.gateway(collector: collector.baseURL, ratio: 0)
        atTestEnd { await unsampled.stop() }
        for index in 0..<20 {
            let response = try await unsampled.send(.get("/unsampled/\(index)", token: TestKeys.token()))
            #expect(response.status == 200)
            #expect(response.echoedHeader("traceparent").isEmpty)
        }
        // A trace the client sampled is still followed.
        let followed = try await unsampled.send(
            .get(
                "/followed", token: TestKeys.token(),
                headers: [("traceparent", "00-11111111111111111111111111111111-2222222222222222-01")]))
        #expect(followed.echoedHeader("traceparent").first?.hasPrefix("00-11111111111111111111111111111111-") == true)
        try await poll { !Self.spans(collector).isEmpty }
        #expect(Set(Self.spans(collector).map(\.traceID)) == ["11111111111111111111111111111111"])

        let dead = try await Self.gateway(collector: "http://127.0.0.1:1")
        atTestEnd { await dead.stop() }
        let client = try await dead.connect()
        for index in 0..<50 {
            #expect(try await client.send(.get("/dead-collector/\(index)", token: TestKeys.token())).status == 200)
        }
        await client.close()
        // The spans the dead collector never got are counted (swift-otel exports in the
        // background, one batch a second; each failed batch counts its spans).
        let dropped = "auth_gateway_trace_spans_dropped_total{reason=\"export_failed\"} "
        var count = 0
        let counted = try await eventually(timeout: .seconds(60)) {
            let metrics = try await TestConnection.connect(port: dead.adminPort).send(.get("/metrics")).text
            count =
                metrics.split(separator: "\n").first { $0.hasPrefix(dropped) }.flatMap {
                    Int($0.dropFirst(dropped.count))
                } ?? 0
            return count > 0
        }
        #expect(counted, "no dropped spans counted")
        #expect(count <= 50 * 6, "more spans dropped than the requests made: \(count)")
    }

    @Test func checkValidatesTheTracingSection() throws {
        let text = """
            {"listener":{},"backends":{"a":{"urls":["http://127.0.0.1:1"]}},
             "routes":[{"name":"r","pathPrefix":"/","backend":"a","auth":"none"}],
             "tracing":{"otlpEndpoint":"ftp://x","sampleRatio":2,"otlpProtocol":"grpc","extra":1}}
            """
        do {
            _ = try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
            Issue.record("an invalid tracing section must be refused")
        } catch {
            let paths = Set(error.issues.map(\.path))
            #expect(
                paths.isSuperset(of: [
                    "tracing.otlpEndpoint", "tracing.sampleRatio", "tracing.otlpProtocol", "tracing.extra",
                ]))
        }
    }
}
