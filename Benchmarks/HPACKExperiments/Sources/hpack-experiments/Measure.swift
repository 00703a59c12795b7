/// A monotonic-clock loop: the best of `runs` runs of `iterations` calls, in nanoseconds per call.
///
/// The best run rather than the mean, because the machine is shared: other work only ever makes
/// a run slower. Each call's input goes through `opaque(_:)`, so that the compiler can neither
/// hoist the call out of the loop nor specialise it for a constant.
struct Measurement {
    var best: Double
    var worst: Double
}

func measure(iterations: Int, runs: Int = 7, _ body: (Int) -> Int) -> Measurement {
    let clock = ContinuousClock()
    var sink = 0
    var best = Double.infinity
    var worst = 0.0
    for _ in 0..<runs {
        let start = clock.now
        for iteration in 0..<iterations {
            sink &+= body(iteration)
        }
        let elapsed = clock.now - start
        let (seconds, attoseconds) = elapsed.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        best = min(best, nanoseconds / Double(iterations))
        worst = max(worst, nanoseconds / Double(iterations))
    }
    consume(sink)
    return Measurement(best: best, worst: worst)
}

@inline(never)
func opaque<T>(_ value: T) -> T {
    value
}

@inline(never)
func consume(_ value: Int) {
    if value == 0x5eed_5eed {
        print("")
    }
}

/// Prints one row of the results table.
func report(_ name: String, upstream: Measurement, patched: Measurement) {
    func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return "\(rounded)"
    }
    let gain = upstream.best / patched.best
    print(
        "| \(name) | \(format(upstream.best)) (worst \(format(upstream.worst))) "
            + "| \(format(patched.best)) (worst \(format(patched.worst))) | \(format(gain))× |"
    )
}
