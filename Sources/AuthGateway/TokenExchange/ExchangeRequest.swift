import Foundation
import NIOCore
import NIOHTTP1

/// The token endpoint's request for one exchange (docs/token-exchange.md): RFC 8693 §2.1 or
/// RFC 7523 §2.1, form-encoded, the client authenticated as an oauth2 refresh does.
enum ExchangeRequestBuilder {
    static let tokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    /// The form fields, in the order sent (the subject token among them: never log them).
    static func form(_ configuration: ExchangeConfiguration, subjectToken: String) -> [(String, String)] {
        var form: [(String, String)]
        switch configuration.grant {
        case .tokenExchange:
            form = [
                ("grant_type", Self.tokenExchangeGrant), ("subject_token", subjectToken),
                ("subject_token_type", Self.accessTokenType),
            ]
            for resource in configuration.resource { form.append(("resource", resource)) }
        case .jwtBearer:
            form = [("grant_type", Self.jwtBearerGrant), ("assertion", subjectToken)]
        }
        for audience in configuration.audience { form.append(("audience", audience)) }
        if let scope = configuration.scope { form.append(("scope", scope)) }
        for parameter in configuration.extraParameters { form.append((parameter.name, parameter.value)) }
        return form
    }

    static func build(_ configuration: ExchangeConfiguration, subjectToken: String) -> UpstreamRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        var form = Self.form(configuration, subjectToken: subjectToken)
        FormEncoding.authenticateClient(
            configuration.clientID, secret: configuration.clientSecret, as: configuration.clientAuthentication,
            headers: &headers, form: &form)
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let path = configuration.tokenEndpoint.pathAndQuery.isEmpty ? "/" : configuration.tokenEndpoint.pathAndQuery
        return UpstreamRequest(
            method: .POST, path: path, headers: headers, body: ByteBuffer(string: FormEncoding.body(form)))
    }
}

/// Classifies the token endpoint's answer (docs/token-exchange.md, "Failures").
///
/// A 2xx with a non-empty `access_token` is an exchange. Any 4xx whose body names an OAuth
/// `error` is a refusal naming that code (RFC 6749 §5.2: `invalid_grant`, `invalid_target`,
/// `invalid_scope`, `unauthorized_client`, and also `invalid_request`, `invalid_client`, …):
/// the provider decided, asking again would not change it. A 4xx without one, a 429, a 5xx, a
/// 2xx without a token and anything unreadable is "unavailable": not the caller's fault, and
/// worth trying again.
enum ExchangeResponseReader {
    /// How much earlier than the token's own expiry it stops being used.
    static let marginSeconds = 30.0

    static func outcome(of response: UpstreamResponse, subjectExpiresAt: Double?, now: Double) -> ExchangeOutcome {
        let document = try? JSONValue(parsing: String(buffer: response.body))
        switch response.status.code {
        case 200..<300:
            guard case .string(let token)? = document?["access_token"], !token.isEmpty,
                Self.isHeaderSafe(token)
            else { return .unavailable }
            let expiresAt = Self.expiry(of: document!, token: token, now: now)
            var usableUntil = (expiresAt ?? now) - Self.marginSeconds
            if let subjectExpiresAt { usableUntil = min(usableUntil, subjectExpiresAt) }
            return .exchanged(token: token, usableUntil: usableUntil)
        case 429:
            return .unavailable
        case 400..<500:
            guard let code = document?["error"]?.stringValue else { return .unavailable }
            return .refused(code: code)
        default:
            return .unavailable
        }
    }

    /// `expires_in` (seconds from now), else the token's own `exp` when it is a JWT; nil when
    /// neither says (then the token is used by the requests that waited for it, and not kept).
    static func expiry(of document: JSONValue, token: String, now: Double) -> Double? {
        if case .number(let seconds)? = document["expires_in"], seconds.double > 0 {
            return now + seconds.double
        }
        if case .string(let text)? = document["expires_in"], let seconds = Double(text), seconds > 0 {
            return now + seconds
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]),
            let claims = try? JSONValue(parsing: String(decoding: bytes, as: UTF8.self)),
            case .number(let exp)? = claims["exp"]
        else { return nil }
        return exp.double
    }

    /// The token goes into `Authorization: Bearer`: visible ASCII only (RFC 6750 §2.1 b64token
    /// and then some), so an answer cannot split the header block.
    private static func isHeaderSafe(_ token: String) -> Bool {
        token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
