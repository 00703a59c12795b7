/// A Prometheus-style cumulative histogram of durations in seconds. A plain value: each event
/// loop owns its own and the scrape adds them up, so recording takes no lock.
struct Histogram: Sendable {
    static let defaultBounds: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    ]

    let bounds: [Double]
    /// Non-cumulative counts per bucket; the last slot is `+Inf`.
    private(set) var counts: [UInt64]
    private(set) var sum: Double = 0
    private(set) var count: UInt64 = 0

    init(bounds: [Double] = Histogram.defaultBounds) {
        self.bounds = bounds
        self.counts = Array(repeating: 0, count: bounds.count + 1)
    }

    mutating func observe(_ seconds: Double) {
        var slot = self.bounds.count
        for (index, bound) in self.bounds.enumerated() where seconds <= bound {
            slot = index
            break
        }
        self.counts[slot] += 1
        self.sum += seconds
        self.count += 1
    }

    mutating func merge(_ other: Histogram) {
        for index in self.counts.indices { self.counts[index] += other.counts[index] }
        self.sum += other.sum
        self.count += other.count
    }

    /// (upper bound, cumulative count) pairs, `+Inf` last.
    var cumulative: [(bound: String, count: UInt64)] {
        var running: UInt64 = 0
        var rows: [(bound: String, count: UInt64)] = []
        for (index, count) in self.counts.enumerated() {
            running += count
            rows.append((index < self.bounds.count ? PrometheusText.number(self.bounds[index]) : "+Inf", running))
        }
        return rows
    }
}
