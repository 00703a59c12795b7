/// The streams' metric families (docs/streams.md).
extension MetricKey {
    static func openStreams(route: String) -> MetricKey { MetricKey(MetricName.openStreams, ["route": route]) }
    static func streamsClosed(_ reason: StreamCloseReason) -> MetricKey {
        MetricKey(MetricName.streamsClosed, ["reason": reason.rawValue])
    }
}
