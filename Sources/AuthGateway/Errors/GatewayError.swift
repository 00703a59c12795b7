import Foundation
import NIOHTTP1

/// An answer the gateway gives itself instead of forwarding.
///
/// A struct over one immutable definition (as AsyncHTTPClient's `HTTPClientError` hides its
/// kind): callers build one with the static constructors of GatewayError+Kinds.swift, where each
/// kind states its type, status, detail, challenge and metric reason in one declaration, so a
/// new kind is one edit there. `errorType` is the stable name used in the problem document's
/// `type`, the `reason` metric label and the log line (docs/errors.md).
///
/// One reference wide: a step's result (`StepResult`) that may carry an error stays as small as
/// its value.
public struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    private let definition: Definition

    init(
        _ kindName: KindName, _ errorType: String, _ status: HTTPResponseStatus, _ detail: String,
        oauthError: String? = nil, challenge: Challenge = .none, authFailure: String? = nil,
        retryAfterSeconds: Int? = nil, rateLimitName: String? = nil
    ) {
        self.definition = Definition(
            .init(
                kindName: kindName, errorType: errorType, status: status, detail: detail, oauthError: oauthError,
                challenge: challenge, authFailureReason: authFailure, retryAfterSeconds: retryAfterSeconds,
                rateLimitName: rateLimitName))
    }

    /// What a 401 or 403 answers in `WWW-Authenticate` (RFC 6750 §3, RFC 9449 §7.1).
    enum Challenge: Equatable, Sendable {
        case none
        /// No credential was presented: the bare challenge, without an error attribute.
        case bearer
        /// `error` (the RFC 6750 code) and the detail as `error_description`.
        case bearerError
        /// The DPoP scheme with the accepted proof algorithms.
        case dpop(algs: String)
        /// The DPoP scheme with `error`, the detail and the algorithms.
        case dpopError(algs: String)
    }

    /// Stable dotted name, e.g. `token.expired`.
    public var errorType: String { self.definition.fields.errorType }
    public var status: HTTPResponseStatus { self.definition.fields.status }
    public var detail: String { self.definition.fields.detail }
    /// The RFC 6750 §3.1 error code, where one applies.
    public var oauthError: String? { self.definition.fields.oauthError }
    /// Seconds for `Retry-After` on temporary failures.
    public var retryAfterSeconds: Int? { self.definition.fields.retryAfterSeconds }
    /// The failure reason for `auth_gateway_auth_failures_total`, for token-related errors.
    public var authFailureReason: String? { self.definition.fields.authFailureReason }
    /// The rate limit that refused the request, for the metric and the access log.
    public var rateLimitName: String? { self.definition.fields.rateLimitName }
    /// Which kind this is, by name (GatewayError+Kinds.swift).
    var kindName: KindName { self.definition.fields.kindName }

    /// Whether the request target itself was refused (not a target, or an ambiguous spelling):
    /// the access log names no path for it (docs/forwarding.md, "Request targets").
    public var refusesTarget: Bool {
        [.invalidPath, .ambiguousPath, .ambiguousHost].contains(self.kindName)
    }

    /// The value of `WWW-Authenticate` for 401 and 403 answers (RFC 6750 §3); every 401 has
    /// one (RFC 9110 §15.5.2, docs/errors.md).
    public var wwwAuthenticate: String? {
        switch self.definition.fields.challenge {
        case .none:
            return nil
        case .bearer:
            return "Bearer realm=\"auth-gateway\""
        case .bearerError:
            return
                "Bearer realm=\"auth-gateway\", error=\"\(self.oauthError ?? "invalid_token")\", error_description=\"\(Self.quoted(self.detail))\""
        case .dpop(let algs):
            return "DPoP algs=\"\(algs)\""
        case .dpopError(let algs):
            return
                "DPoP error=\"\(self.oauthError ?? "invalid_dpop_proof")\", error_description=\"\(Self.quoted(self.detail))\", algs=\"\(algs)\""
        }
    }

    /// The inside of a quoted-string (RFC 9110 §5.6.4): the detail may name a configured claim.
    private static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    public var description: String { "\(self.status.code) \(self.errorType): \(self.detail)" }

    /// The RFC 9457 problem document.
    public func problemJSON(requestID: String) -> String {
        let document: JSONValue = [
            "type": .string("urn:auth-gateway:problem:\(self.errorType)"),
            "title": .string(self.status.reasonPhrase),
            "status": .number(JSONNumber(Int(self.status.code))),
            "detail": .string(self.detail),
            // The RFC 6750 code where one applies, else the gateway's own stable error type.
            "error": .string(self.oauthError ?? self.errorType),
            "requestId": .string(requestID),
        ]
        return document.jsonText
    }

    public static func == (lhs: GatewayError, rhs: GatewayError) -> Bool {
        lhs.definition === rhs.definition || lhs.definition.fields == rhs.definition.fields
    }

    /// A kind's declaration with its details filled in.
    private final class Definition: Sendable {
        struct Fields: Equatable, Sendable {
            let kindName: KindName
            let errorType: String
            let status: HTTPResponseStatus
            let detail: String
            let oauthError: String?
            let challenge: Challenge
            let authFailureReason: String?
            let retryAfterSeconds: Int?
            let rateLimitName: String?
        }
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }
}
