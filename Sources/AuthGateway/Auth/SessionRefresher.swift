import Foundation
import NIOCore
import NIOHTTP1

/// Redeems refresh tokens with the auth service as one configuration says (docs/authentication.md):
/// builds the request of either protocol, classifies the answer, counts it. Once per refresh token:
/// the calls go through the application's `RefreshStore` (single flight + grace), which
/// outlives this configuration-bound object across reloads.
final class SessionRefresher: Sendable {
    typealias Outcome = RefreshOutcome

    let configuration: RefreshConfiguration
    /// `authService.timeoutMilliseconds`: bounds each call (and a shared store's lease).
    private let callTimeoutMilliseconds: Int
    private let store: RefreshStore
    private let metrics: ProcessMetrics
    private let clock: @Sendable () -> Double

    init(
        configuration: RefreshConfiguration, callTimeoutMilliseconds: Int, store: RefreshStore, metrics: ProcessMetrics,
        clock: @escaping @Sendable () -> Double
    ) {
        self.configuration = configuration
        self.callTimeoutMilliseconds = callTimeoutMilliseconds
        self.store = store
        self.metrics = metrics
        self.clock = clock
    }

    /// The outcome for `refreshToken`, from the grace table, a call in flight, or a new call
    /// to `endpoint` (on the caller's event loop). `claims` are the expired token's
    /// verified claims, for `{claims.*}` in a JSON body.
    func refresh(refreshToken: Substring, claims: JSONObject, endpoint: UpstreamEndpoint) -> EventLoopFuture<Outcome> {
        let client = endpoint.client
        let path = endpoint.path
        let token = String(refreshToken)
        let metrics = self.metrics
        return self.store.outcome(
            for: TokenDigest(of: refreshToken), graceSeconds: self.configuration.graceSeconds,
            callTimeoutMilliseconds: self.callTimeoutMilliseconds, now: self.clock(), eventLoop: client.eventLoop,
            joined: { metrics.increment(.refreshJoin) }
        ) {
            // The call's own duration: a shared store's claim comes before it.
            let started = self.clock()
            return self.call(refreshToken: token, claims: claims, client: client, path: path).map { outcome in
                self.metrics.observe(.authServiceDuration(.refresh), seconds: self.clock() - started)
                self.metrics.increment(.refresh(outcome: outcome.label))
                return outcome
            }
        }.map { outcome, role in
            if role == .remembered { self.metrics.increment(.refreshGraceHit) }
            return outcome
        }
    }

    /// One call to the auth service.
    private func call(
        refreshToken: String, claims: JSONObject, client: UpstreamClient, path: String
    ) -> EventLoopFuture<Outcome> {
        let request: UpstreamRequest
        do {
            request = try RefreshRequestBuilder.build(
                configuration: self.configuration, path: path, refreshToken: refreshToken, claims: claims)
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
    /// `path`: on the auth service (`refresh.path`), or of the discovered `token_endpoint`.
    static func build(
        configuration: RefreshConfiguration, path: String, refreshToken: String, claims: JSONObject
    ) throws(RefreshBodyTemplate.RenderError) -> UpstreamRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        let body: String
        switch configuration.protocol {
        case .json(let template):
            body = try RefreshBodyTemplate.render(template, refreshToken: refreshToken, claims: claims).jsonText
            headers.add(name: "Content-Type", value: "application/json")
        case .oauth2(let clientID, let clientSecret, let authentication):
            var form = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
            FormEncoding.authenticateClient(
                clientID, secret: clientSecret, as: authentication, headers: &headers, form: &form)
            body = FormEncoding.body(form)
            headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        }
        return UpstreamRequest(method: .POST, path: path, headers: headers, body: ByteBuffer(string: body))
    }
}

/// Classifies the auth service's answer to a refresh (docs/authentication.md).
enum RefreshResponseReader {
    static func outcome(of response: UpstreamResponse, configuration: RefreshConfiguration) -> SessionRefresher.Outcome
    {
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
