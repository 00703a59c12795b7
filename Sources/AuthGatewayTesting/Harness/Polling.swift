import Foundation

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
/// Tests order events with this, never with a fixed sleep. The default bound is generous: it only
/// lengthens a failing test, and a loaded 2-core machine needed more than 5 s.
package func eventually(timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Whether a TCP connection to 127.0.0.1:`port` is accepted (closed again at once).
package func acceptsConnections(port: Int) async -> Bool {
    guard let connection = try? await RawConnection.connect(port: port) else { return false }
    await connection.close()
    return true
}
