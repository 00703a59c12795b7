import Foundation
import NIOCore
import NIOHTTP1

/// Redeems refresh tokens with the auth service, once per refresh token across the whole
/// process (SPEC §4.3).
///
/// - Single flight: the first request with a given refresh token calls the auth service; every
///   concurrent request with the same token joins that call, whatever its event loop.
/// - Grace: the outcome stays for `graceSeconds` under the token's hash, so a straggler still
///   holding the old pair succeeds even when the service rotates refresh tokens and refuses
///   reuse (the race that signs oauth2-proxy users out).
/// - Only definite answers are remembered; "unavailable" is not, so the next request retries.
final class SessionRefresher: Sendable {
    enum Outcome: Sendable, Equatable {
        /// New tokens; `refreshToken` is nil when the service did not rotate it.
        case refreshed(accessToken: String, refreshToken: String?)
        /// The service refused the refresh token (400/401/403, or 2xx without an access token).
        case rejected
        /// Unreachable, timed out, 5xx, 429 or unreadable: try again later (503).
        case unavailable
    }

    private struct Slot: Sendable {
        var inFlight: EventLoopFuture<Outcome>?
        var outcome: Outcome?
        var expiresAt: Double = 0
    }

    private let configuration: RefreshConfiguration
    private let slots: Sharded<LRUCache<TokenDigest, Slot>>
    private let metrics: ProcessMetrics
    private let clock: @Sendable () -> Double

    init(configuration: RefreshConfiguration, metrics: ProcessMetrics, clock: @escaping @Sendable () -> Double, capacity: Int = 100_000) {
        self.configuration = configuration
        self.metrics = metrics
        self.clock = clock
        self.slots = Sharded(capacity: capacity) { LRUCache(capacity: $0) }
    }

    /// The outcome for `refreshToken`, from the grace table, a call in flight, or a new call
    /// made with `client` (on the caller's event loop). `claims` are the expired token's
    /// verified claims, for `{claims.*}` in a JSON body.
    func refresh(refreshToken: Substring, claims: JSONObject, client: UpstreamClient) -> EventLoopFuture<Outcome> {
        let eventLoop = client.eventLoop
        let digest = TokenDigest(of: refreshToken)
        let now = self.clock()
        enum Step {
            case remembered(Outcome)
            case join(EventLoopFuture<Outcome>)
            case call(EventLoopPromise<Outcome>)
        }
        let step: Step = self.slots.withShard(for: digest) { table in
            var slot = table.get(digest) ?? Slot()
            if let outcome = slot.outcome, now < slot.expiresAt { return .remembered(outcome) }
            if let inFlight = slot.inFlight { return .join(inFlight) }
            let promise = eventLoop.makePromise(of: Outcome.self)
            slot.inFlight = promise.futureResult
            slot.outcome = nil
            table.set(digest, slot)
            return .call(promise)
        }
        switch step {
        case .remembered(let outcome):
            self.metrics.increment(MetricKey(MetricName.refreshGraceHits))
            return eventLoop.makeSucceededFuture(outcome)
        case .join(let inFlight):
            self.metrics.increment(MetricKey(MetricName.refreshJoins))
            return inFlight.hop(to: eventLoop)
        case .call(let promise):
            let started = self.clock()
            self.call(refreshToken: String(refreshToken), claims: claims, client: client).whenComplete { result in
                let outcome = (try? result.get()) ?? .unavailable
                let finished = self.clock()
                self.metrics.observe(MetricKey(MetricName.authServiceDuration, ["operation": "refresh"]), seconds: finished - started)
                self.metrics.increment(MetricKey(MetricName.refreshes, ["outcome": Self.label(outcome)]))
                self.slots.withShard(for: digest) { table in
                    if outcome == .unavailable {
                        table.remove(digest)
                    } else {
                        table.set(digest, Slot(inFlight: nil, outcome: outcome, expiresAt: finished + Double(self.configuration.graceSeconds)))
                    }
                }
                promise.succeed(outcome)
            }
            return promise.futureResult
        }
    }

    private static func label(_ outcome: Outcome) -> String {
        switch outcome {
        case .refreshed: return "refreshed"
        case .rejected: return "rejected"
        case .unavailable: return "unavailable"
        }
    }

    /// One call to the auth service.
    private func call(refreshToken: String, claims: JSONObject, client: UpstreamClient) -> EventLoopFuture<Outcome> {
        let request: UpstreamRequest
        do {
            request = try RefreshRequestBuilder.build(configuration: self.configuration, refreshToken: refreshToken, claims: claims)
        } catch {
            // The expired token lacks a claim the template needs: the refresh cannot be made.
            return client.eventLoop.makeSucceededFuture(.rejected)
        }
        return client.execute(request).map { response in
            RefreshResponseReader.outcome(of: response, configuration: self.configuration)
        }.recover { _ in .unavailable }
    }
}

/// Builds the refresh request of either protocol.
enum RefreshRequestBuilder {
    static func build(configuration: RefreshConfiguration, refreshToken: String, claims: JSONObject) throws(RefreshBodyTemplate.RenderError) -> UpstreamRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        let body: String
        switch configuration.protocol {
        case .json(let template):
            body = try RefreshBodyTemplate.render(template, refreshToken: refreshToken, claims: claims).jsonText
            headers.add(name: "Content-Type", value: "application/json")
        case .oauth2(let clientID, let clientSecret, let authentication):
            var form = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
            if let clientID {
                switch authentication {
                case .basic:
                    // RFC 6749 §2.3.1: both parts form-encoded before base64.
                    let credentials = "\(FormEncoding.encode(clientID)):\(FormEncoding.encode(clientSecret ?? ""))"
                    headers.add(name: "Authorization", value: "Basic \(Data(credentials.utf8).base64EncodedString())")
                case .form:
                    form.append(("client_id", clientID))
                    if let clientSecret { form.append(("client_secret", clientSecret)) }
                }
            }
            body = form.map { "\(FormEncoding.encode($0.0))=\(FormEncoding.encode($0.1))" }.joined(separator: "&")
            headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        }
        return UpstreamRequest(method: .POST, path: configuration.path, headers: headers, body: ByteBuffer(string: body))
    }
}

/// Classifies the auth service's answer to a refresh (SPEC §4.3).
enum RefreshResponseReader {
    static func outcome(of response: UpstreamResponse, configuration: RefreshConfiguration) -> SessionRefresher.Outcome {
        switch response.status.code {
        case 200..<300:
            guard let document = try? JSONValue(parsing: String(buffer: response.body)),
                case .string(let accessToken)? = document[configuration.accessTokenField],
                !accessToken.isEmpty
            else {
                // A success without an access token counts as a refusal.
                return .rejected
            }
            let refreshToken = document[configuration.refreshTokenField]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            return .refreshed(accessToken: accessToken, refreshToken: refreshToken)
        case 400, 401, 403:
            return .rejected
        default:
            return .unavailable
        }
    }
}

/// `application/x-www-form-urlencoded` encoding (WHATWG URL §5.2).
enum FormEncoding {
    static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                output += "+"
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }
}
