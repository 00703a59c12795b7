import Foundation
import NIOCore
import NIOHTTP1

/// The introspection call and the reading of its answer: pure, tested without I/O.
enum IntrospectionAnswer {
    /// `POST url` with `token=…&token_type_hint=access_token`, the client authenticated as for
    /// a refresh (RFC 6749 §2.3.1 Basic, or the credentials in the form).
    /// `path`: on the endpoint's origin (the configured `url`'s by default).
    static func request(
        for token: String, configuration: IntrospectionConfiguration, path: String? = nil
    ) -> UpstreamRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        var form = [("token", token), ("token_type_hint", "access_token")]
        FormEncoding.authenticateClient(
            configuration.clientID, secret: configuration.clientSecret, as: configuration.clientAuthentication,
            headers: &headers, form: &form
        )
        let body = FormEncoding.body(form)
        let path = (path ?? configuration.url?.pathAndQuery).flatMap { $0.isEmpty ? nil : $0 } ?? "/"
        return UpstreamRequest(method: .POST, path: path, headers: headers, body: ByteBuffer(string: body))
    }

    /// Classifies the endpoint's answer at `now`. 2xx with a JSON object holding a boolean
    /// `active` is an answer; anything else (4xx, 5xx, not JSON, no `active`) means the
    /// endpoint is unavailable. An active answer is refused (inactive) when it expired, is not
    /// valid yet, or names another issuer or audience.
    static func outcome(
        of response: UpstreamResponse, configuration: IntrospectionConfiguration, now: Double
    ) -> IntrospectionOutcome {
        guard (200..<300).contains(response.status.code),
            case .object(let document)? = try? JSONValue(parsing: String(buffer: response.body)),
            case .bool(let active)? = document["active"]
        else { return .unavailable }
        let negative = IntrospectionOutcome.inactive(validUntil: now + Double(configuration.negativeCacheSeconds))
        guard active else { return negative }
        var validUntil = now + Double(configuration.cacheSeconds)
        if let exp = document["exp"] {
            guard let seconds = exp.numberValue?.double, seconds > now else { return negative }
            validUntil = min(validUntil, seconds)
        }
        if let nbf = document["nbf"]?.numberValue?.double, nbf > now { return negative }
        if let expected = configuration.issuer, let iss = document["iss"] {
            guard iss.stringValue == expected else { return negative }
        }
        if let audiences = configuration.audiences, let aud = document["aud"] {
            let values: [String] = aud.arrayValue?.compactMap(\.stringValue) ?? aud.stringValue.map { [$0] } ?? []
            guard values.contains(where: audiences.contains) else { return negative }
        }
        return .active(claims: document, validUntil: validUntil)
    }
}

extension CompactJWS {
    /// Whether `token` has the shape of a compact JWS: three dot-separated base64url parts, the
    /// first two non-empty (docs/authentication.md: any other token is opaque and introspected). A
    /// JWS-shaped token is verified as a JWT and never sent to introspection.
    static func hasCompactShape(_ token: Substring) -> Bool {
        var dots = 0
        var partLength = 0
        for byte in token.utf8 {
            if byte == UInt8(ascii: ".") {
                if dots < 2 && partLength == 0 { return false }
                dots += 1
                partLength = 0
                if dots > 2 { return false }
                continue
            }
            guard Base64URL.isAlphabetByte(byte) else { return false }
            partLength += 1
        }
        return dots == 2
    }
}
