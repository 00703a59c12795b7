import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("RefreshResponseReader")
struct RefreshResponseReaderTests {
    private let json = makeRefreshConfiguration(.json(bodyTemplate: [:]))
    private let oauth2 = makeRefreshConfiguration(
        .oauth2(clientID: nil, clientSecret: nil, clientAuthentication: .basic), path: "/oauth2/token",
        accessTokenField: "access_token", refreshTokenField: "refresh_token")

    private func outcome(
        _ code: Int, _ body: String, configuration: RefreshConfiguration? = nil
    ) -> SessionRefresher.Outcome {
        let response = UpstreamResponse(
            status: HTTPResponseStatus(statusCode: code), headers: HTTPHeaders(), body: ByteBuffer(string: body))
        return RefreshResponseReader.outcome(of: response, configuration: configuration ?? json)
    }

    @Test("2xx with the access field: refreshed, with the rotated refresh token when present")
    func refreshed() {
        #expect(
            outcome(200, #"{"accesstoken":"new-at","refreshtoken":"new-rt"}"#)
                == .refreshed(accessToken: "new-at", refreshToken: "new-rt"))
        #expect(
            outcome(201, #"{"accesstoken":"new-at","user":{"id":1}}"#)
                == .refreshed(accessToken: "new-at", refreshToken: nil))
        #expect(
            outcome(200, #"{"accesstoken":"new-at","refreshtoken":""}"#)
                == .refreshed(accessToken: "new-at", refreshToken: nil))
        #expect(
            outcome(200, #"{"accesstoken":"new-at","refreshtoken":5}"#)
                == .refreshed(accessToken: "new-at", refreshToken: nil))
    }

    @Test("the configured field names are used")
    func fieldNames() {
        let body = #"{"access_token":"at","refresh_token":"rt","token_type":"Bearer","expires_in":300}"#
        #expect(outcome(200, body, configuration: oauth2) == .refreshed(accessToken: "at", refreshToken: "rt"))
        #expect(outcome(200, body, configuration: json) == .rejected)
    }

    @Test(
        "2xx without a usable access token counts as a rejection",
        arguments: [
            "", "{}", "null", "not json", #"{"accesstoken":""}"#, #"{"accesstoken":null}"#, #"{"accesstoken":42}"#,
            #"[{"accesstoken":"a"}]"#, #"{"data":{"accesstoken":"a"}}"#,
        ]
    )
    func successWithoutAccessToken(_ body: String) {
        #expect(outcome(200, body) == .rejected)
    }

    @Test("400, 401 and 403 are rejections, with or without an OAuth error body", arguments: [400, 401, 403])
    func rejected(_ code: Int) {
        #expect(outcome(code, #"{"error":"invalid_grant"}"#, configuration: oauth2) == .rejected)
        #expect(outcome(code, "") == .rejected)
        // Even a body that looks like success does not turn a refusal around.
        #expect(outcome(code, #"{"accesstoken":"a"}"#) == .rejected)
    }

    @Test(
        "other statuses mean the auth service is unavailable",
        arguments: [404, 408, 429, 500, 502, 503, 504, 301, 302, 100])
    func unavailable(_ code: Int) {
        #expect(outcome(code, #"{"accesstoken":"a"}"#) == .unavailable)
    }
}
