import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("GatewayError")
struct GatewayErrorTests {
    static let all: [GatewayError] =
        [
            .malformedRequest("Bad framing"), .invalidPath, .ambiguousToken, .headersTooLarge, .bodyTooLarge,
            .requestTimeout,
            .upgradeUnsupported, .routeNotFound, .tokenMissing, .refreshRejected, .profileRejected,
            .forbidden("profile.super_admin"),
            .upstreamUnreachable, .upstreamTimeout, .upstreamBusy, .upstreamProtocolError, .authServiceUnavailable,
            .keysUnavailable, .overloaded,
        ] + TokenFailure.allCases.map(GatewayError.tokenRejected)

    @Test("status codes (docs/errors.md)")
    func statusCodes() {
        let expected: [(GatewayError, Int)] = [
            (.malformedRequest("x"), 400), (.invalidPath, 400), (.ambiguousToken, 400), (.headersTooLarge, 431),
            (.bodyTooLarge, 413),
            (.requestTimeout, 408), (.routeNotFound, 404), (.tokenMissing, 401), (.tokenRejected(.expired), 401),
            (.tokenRejected(.badSignature), 401), (.refreshRejected, 401), (.profileRejected, 401),
            (.forbidden("claims.x"), 403),
            (.upstreamUnreachable, 502), (.upstreamProtocolError, 502), (.upstreamTimeout, 504), (.upstreamBusy, 503),
            (.authServiceUnavailable, 503), (.keysUnavailable, 503), (.overloaded, 503),
        ]
        for (error, code) in expected {
            #expect(Int(error.status.code) == code, "\(error.errorType)")
        }
    }

    @Test("a missing token is challenged without an error attribute (RFC 6750 §3.1)")
    func missingTokenChallenge() {
        #expect(GatewayError.tokenMissing.wwwAuthenticate == #"Bearer realm="auth-gateway""#)
        #expect(GatewayError.tokenMissing.oauthError == nil)
    }

    /// Each refusal's metric reason and `error_description`, written out (not built from the
    /// product's own strings, which would make the test agree with any change of them).
    static let refusals: [(failure: TokenFailure, reason: String, description: String)] = [
        (.malformed, "malformed", "The access token is malformed"),
        (.unsupportedAlgorithm, "unsupported_algorithm", "The access token uses an unsupported algorithm"),
        (.unknownKey, "unknown_key", "The access token is signed with an unknown key"),
        (.algorithmMismatch, "algorithm_mismatch", "The access token algorithm does not match its key"),
        (.badSignature, "bad_signature", "The access token signature is invalid"),
        (.criticalHeader, "critical_header", "The access token has an unsupported critical header"),
        (.expired, "expired", "The access token expired"),
        (.notYetValid, "not_yet_valid", "The access token is not valid yet"),
        (.issuedInFuture, "issued_in_future", "The access token was issued in the future"),
        (.wrongIssuer, "wrong_issuer", "The access token issuer is not trusted"),
        (.wrongAudience, "wrong_audience", "The access token is not meant for this audience"),
        (.missingClaim, "missing_claim", "The access token lacks a required claim"),
        (.invalidClaim, "invalid_claim", "The access token has an invalid claim"),
    ]

    @Test("every token failure has its written-out row")
    func refusalsCoverEveryFailure() {
        #expect(Set(Self.refusals.map(\.failure)) == Set(TokenFailure.allCases))
        #expect(Self.refusals.count == TokenFailure.allCases.count)
    }

    @Test("a presented but refused token gets invalid_token with a description", arguments: Self.refusals.indices)
    func invalidTokenChallenge(_ index: Int) {
        let (failure, reason, description) = Self.refusals[index]
        let error = GatewayError.tokenRejected(failure)
        #expect(
            error.wwwAuthenticate
                == #"Bearer realm="auth-gateway", error="invalid_token", error_description="\#(description)""#)
        #expect(error.oauthError == "invalid_token")
        #expect(error.errorType == "token.\(reason)")
        #expect(error.authFailureReason == reason)
    }

    @Test("refused refreshes and profiles are invalid_token too")
    func otherInvalidToken() {
        for error in [GatewayError.refreshRejected, .profileRejected] {
            #expect(
                error.wwwAuthenticate?.hasPrefix(
                    #"Bearer realm="auth-gateway", error="invalid_token", error_description=""#) == true)
        }
    }

    @Test("403 carries insufficient_scope")
    func forbiddenChallenge() {
        let error = GatewayError.forbidden("profile.super_admin")
        #expect(error.wwwAuthenticate?.hasPrefix(#"Bearer realm="auth-gateway", error="insufficient_scope""#) == true)
        #expect(error.oauthError == "insufficient_scope")
        #expect(error.detail.contains("profile.super_admin"))
    }

    @Test("only 401 and 403 answers carry a challenge")
    func challengesOnlyForAuth() {
        for error in Self.all {
            let code = error.status.code
            #expect((error.wwwAuthenticate != nil) == (code == 401 || code == 403), "\(error.errorType)")
        }
    }

    @Test("error_description is a valid quoted-string for RFC 6750 (no \" or \\, printable ASCII)")
    func descriptionCharacters() {
        for error in Self.all {
            guard let challenge = error.wwwAuthenticate, let range = challenge.range(of: "error_description=\"") else {
                continue
            }
            let description = challenge[range.upperBound...].dropLast()
            #expect(challenge.hasSuffix("\""))
            #expect(
                description.unicodeScalars.allSatisfy {
                    $0.value >= 0x20 && $0.value <= 0x7E && $0 != "\"" && $0 != "\\"
                }, "\(error.errorType)")
            #expect(!description.isEmpty)
        }
    }

    @Test("invalid_request for malformed requests and ambiguous tokens")
    func invalidRequest() {
        #expect(GatewayError.ambiguousToken.oauthError == "invalid_request")
        #expect(GatewayError.malformedRequest("x").oauthError == "invalid_request")
        #expect(GatewayError.invalidPath.oauthError == "invalid_request")
        #expect(GatewayError.upstreamTimeout.oauthError == nil)
    }

    @Test("temporary failures say when to retry; others do not")
    func retryAfter() {
        for error in Self.all {
            let temporary = error.status == .serviceUnavailable
            #expect((error.retryAfterSeconds != nil) == temporary, "\(error.errorType)")
            if let seconds = error.retryAfterSeconds { #expect(seconds > 0) }
        }
    }

    @Test("errors of different kinds or details differ")
    func equality() {
        #expect(GatewayError.tokenRejected(.expired) != .tokenRejected(.badSignature))
        #expect(GatewayError.malformedRequest("a") != .malformedRequest("b"))
        #expect(GatewayError.tokenMissing != .refreshRejected)
        #expect(Set(Self.all.map(\.errorType)).count == Self.all.count)
    }

    @Test("the problem document (RFC 9457) parses back with every member", arguments: all)
    func problemJSON(_ error: GatewayError) throws {
        let document = try JSONValue(parsing: error.problemJSON(requestID: "req-\"1\\"))
        let object = try #require(document.objectValue)
        #expect(Set(object.keys) == ["type", "title", "status", "detail", "error", "requestId"])
        #expect(document["type"]?.stringValue?.hasSuffix(error.errorType) == true)
        #expect(document["title"]?.stringValue == error.status.reasonPhrase)
        #expect(document["status"]?.numberValue?.exactInt == Int(error.status.code))
        #expect(document["detail"]?.stringValue == error.detail)
        #expect(document["error"]?.stringValue == (error.oauthError ?? error.errorType))
        #expect(document["requestId"]?.stringValue == "req-\"1\\")
    }

    @Test("a malformed-request detail is carried through")
    func malformedDetail() {
        #expect(
            GatewayError.malformedRequest("Conflicting Content-Length headers").detail
                == "Conflicting Content-Length headers")
        #expect(GatewayError.malformedRequest("x").description == "400 request.malformed: x")
    }
}
