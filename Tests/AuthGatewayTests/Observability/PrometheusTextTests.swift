import Testing

@testable import AuthGateway

/// The Prometheus text exposition (version 0.0.4) of the metrics, against literal expectations.
@Suite("Histogram and PrometheusText")
struct PrometheusTextTests {
    @Test func aHistogramIsCumulativeWithInfLast() {
        var histogram = Histogram(bounds: [0.1, 1])
        for seconds in [0.05, 0.1, 0.5, 2, 3] { histogram.observe(seconds) }
        #expect(histogram.count == 5)
        #expect(abs(histogram.sum - 5.65) < 1e-9)
        #expect(histogram.cumulative.map(\.bound) == ["0.1", "1", "+Inf"])
        #expect(histogram.cumulative.map(\.count) == [2, 3, 5])
        var other = Histogram(bounds: [0.1, 1])
        other.observe(0.01)
        histogram.merge(other)
        #expect(histogram.cumulative.map(\.count) == [3, 4, 6])
    }

    @Test func countersGaugesAndHistogramsRenderWithSortedEscapedLabels() {
        var snapshot = MetricsSnapshot()
        snapshot.requests[.init(route: "de\"fault", statusClass: 2, wireProtocol: .h2)] = 3
        snapshot.counters[MetricKey(MetricName.authFailures, ["reason": "expired"])] = 2
        snapshot.counters[MetricKey(MetricName.authFailures, ["reason": "bad_signature"])] = 1
        snapshot.gauges[MetricKey(MetricName.openConnections)] = 7
        var histogram = Histogram(bounds: [0.5])
        histogram.observe(0.25)
        snapshot.histograms[MetricKey(MetricName.upstreamDuration, ["backend": "api"])] = histogram
        let text = PrometheusText.render(snapshot)
        #expect(text.contains("# TYPE auth_gateway_requests_total counter\n"))
        #expect(
            text.contains("auth_gateway_requests_total{route=\"de\\\"fault\",status_class=\"2xx\",protocol=\"h2\"} 3\n")
        )
        #expect(
            text.contains(
                "auth_gateway_auth_failures_total{reason=\"bad_signature\"} 1\nauth_gateway_auth_failures_total{reason=\"expired\"} 2\n"
            ))
        #expect(text.contains("auth_gateway_open_connections 7\n"))
        #expect(text.contains("auth_gateway_upstream_duration_seconds_bucket{backend=\"api\",le=\"0.5\"} 1\n"))
        #expect(text.contains("auth_gateway_upstream_duration_seconds_bucket{backend=\"api\",le=\"+Inf\"} 1\n"))
        #expect(text.contains("auth_gateway_upstream_duration_seconds_sum{backend=\"api\"} 0.25\n"))
        #expect(text.contains("auth_gateway_upstream_duration_seconds_count{backend=\"api\"} 1\n"))
        // Every family is announced, with or without samples.
        #expect(text.contains("# HELP auth_gateway_introspections_total "))
        #expect(text.contains("# TYPE auth_gateway_rate_limited_total counter\n"))
    }

    @Test func numbersAndEscapes() {
        #expect(PrometheusText.number(3) == "3")
        #expect(PrometheusText.number(0.25) == "0.25")
        #expect(PrometheusText.escape("a\\b\"c\nd") == "a\\\\b\\\"c\\nd")
        #expect(PrometheusText.labels([:]) == "")
        #expect(PrometheusText.labels(["b": "2", "a": "1"]) == "{a=\"1\",b=\"2\"}")
    }
}
