/// Runs `body`, then `cleanup` — awaited, whether `body` returned or threw — and returns what
/// `body` returned.
package func withCleanup<T>(_ cleanup: () async -> Void, _ body: () async throws -> T) async rethrows -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return result
}
