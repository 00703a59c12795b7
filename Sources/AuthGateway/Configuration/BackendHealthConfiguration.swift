/// `backends.<name>.healthCheck` (docs/forwarding.md): active probes of every URL, by each process.
public struct HealthCheckConfiguration: Sendable, Equatable {
    /// `GET` this path; 2xx or 3xx within the timeout is a pass.
    public var path = "/healthz"
    public var intervalSeconds = 5
    public var timeoutMilliseconds = 1000
    /// Failures in a row that mark a healthy URL unhealthy.
    public var unhealthyThreshold = 3
    /// Passes in a row that mark an unhealthy URL healthy again.
    public var healthyThreshold = 2

    public init() {}
}

/// `backends.<name>.outlierDetection` (docs/forwarding.md): passive ejection from real traffic.
public struct OutlierDetectionConfiguration: Sendable, Equatable {
    /// Failures in a row (connect failures, resets, timeouts, 502/503/504) that eject a URL.
    public var consecutiveFailures = 5
    /// An ejection lasts `baseEjectionSeconds × n` (n = times ejected), at most 300 s.
    public var baseEjectionSeconds = 30
    /// At most this share of the backend's URLs is ejected at once (rounded down, but one
    /// ejection is always allowed).
    public var maxEjectionPercent = 50

    public init() {}
}
