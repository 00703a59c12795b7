import Foundation

import AuthGatewayTesting
@testable import AuthGateway

/// A token that expires seconds after the stream it opens — on a loaded machine the stream may
/// not be open by then. `attempt` runs with a token of `lifetimes[i]` seconds and its expiry
/// (Unix seconds) and returns nil when the stream could not be established before the token
/// expired; the next, longer lifetime is tried then. What the tests assert — when the stream
/// ends, relative to the expiry — holds for any lifetime.
enum ShortLivedToken {
    static func attempt<Result>(
        subject: String, lifetimes: [Double] = [3, 8, 20], extra: JSONObject = JSONObject(),
        _ body: (_ token: String, _ expiry: Double) async throws -> Result?
    ) async throws -> Result {
        for lifetime in lifetimes {
            let now = Date().timeIntervalSince1970
            let token = TestKeys.token(subject: subject, now: now, expiresIn: lifetime, extra: extra)
            if let result = try await body(token, Double(Int(now + lifetime))) { return result }
        }
        throw TestClientError.timeout
    }
}
