import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

func makeRefreshConfiguration(
    _ refreshProtocol: RefreshConfiguration.RefreshProtocol,
    path: String = "/v1/login",
    accessTokenField: String = "accesstoken",
    refreshTokenField: String = "refreshtoken"
) -> RefreshConfiguration {
    RefreshConfiguration(
        protocol: refreshProtocol,
        path: path,
        accessTokenField: accessTokenField,
        refreshTokenField: refreshTokenField,
        refreshTokenSources: [.header(name: "X-Refresh-Token", bearer: false, raw: true)],
        accessTokenResponseHeader: "X-Access-Token",
        refreshTokenResponseHeader: "X-Refresh-Token",
        maxExpiredSeconds: 604_800,
        graceSeconds: 30
    )
}

@Suite("RefreshRequestBuilder")
struct RefreshRequestBuilderTests {
    private let claims: JSONObject = ["sub": "user-42", "email": "alice@example.com", "user_id": 7]

    private func build(
        _ configuration: RefreshConfiguration, refreshToken: String = "rt/1+2 3"
    ) throws -> UpstreamRequest {
        try RefreshRequestBuilder.build(
            configuration: configuration, path: configuration.path ?? "/token", refreshToken: refreshToken,
            claims: claims)
    }

    private func body(_ request: UpstreamRequest) -> String {
        request.body.map { String(buffer: $0) } ?? ""
    }

    /// The form body as ordered (name, value) pairs, decoded independently of `FormEncoding`.
    private func formFields(_ request: UpstreamRequest) -> [(String, String)] {
        body(request).split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "<bad>"
            }
            return (parts[0], parts.count > 1 ? parts[1] : "<none>")
        }
    }

    /// The id and secret of a Basic header, split and form-decoded (RFC 6749 §2.3.1).
    private func basicCredentials(_ request: UpstreamRequest) -> (id: String, secret: String)? {
        guard let header = request.headers.first(name: "Authorization"), header.hasPrefix("Basic "),
            let data = Data(base64Encoded: String(header.dropFirst(6))), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else { return nil }
        func decode(_ part: Substring) -> String {
            String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "<bad>"
        }
        return (decode(text[..<colon]), decode(text[text.index(after: colon)...]))
    }

    @Test("json: POST to the path with the rendered body")
    func jsonBody() throws {
        let template: JSONValue = [
            "user_name": "{claims.email}", "refreshtoken": "{refreshToken}", "id": "{claims.user_id}",
        ]
        let request = try build(makeRefreshConfiguration(.json(bodyTemplate: template), path: "/v1/login"))
        #expect(request.method == .POST)
        #expect(request.path == "/v1/login")
        #expect(request.headers.first(name: "Content-Type") == "application/json")
        #expect(request.headers.first(name: "Accept") == "application/json")
        #expect(request.headers["Authorization"].isEmpty)
        let sent = try JSONValue(parsing: body(request))
        #expect(sent == ["user_name": "alice@example.com", "refreshtoken": "rt/1+2 3", "id": 7])
    }

    @Test("json: a claim missing from the expired token makes the request impossible")
    func jsonMissingClaim() {
        #expect(throws: RefreshBodyTemplate.RenderError.missingClaim("phone")) {
            try build(makeRefreshConfiguration(.json(bodyTemplate: ["p": "{claims.phone}"])))
        }
    }

    @Test("oauth2 without a client: grant type and refresh token, form-encoded (RFC 6749 §6)")
    func oauth2Public() throws {
        let request = try build(
            makeRefreshConfiguration(
                .oauth2(clientID: nil, clientSecret: nil, clientAuthentication: .basic), path: "/oauth2/token"))
        #expect(request.method == .POST)
        #expect(request.path == "/oauth2/token")
        #expect(request.headers.first(name: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(request.headers["Authorization"].isEmpty)
        #expect(body(request) == "grant_type=refresh_token&refresh_token=rt%2F1%2B2+3")
        #expect(
            formFields(request).map { "\($0.0)=\($0.1)" } == ["grant_type=refresh_token", "refresh_token=rt/1+2 3"])
    }

    @Test("oauth2 basic: id and secret form-encoded, then base64 (RFC 6749 §2.3.1)")
    func oauth2Basic() throws {
        let request = try build(
            makeRefreshConfiguration(
                .oauth2(clientID: "my client", clientSecret: "p@ss:w/rd+%", clientAuthentication: .basic)))
        let header = try #require(request.headers.first(name: "Authorization"))
        let expected = "Basic " + Data("my+client:p%40ss%3Aw%2Frd%2B%25".utf8).base64EncodedString()
        #expect(header == expected)
        let credentials = try #require(basicCredentials(request))
        #expect(credentials.id == "my client")
        #expect(credentials.secret == "p@ss:w/rd+%")
        // The credentials are not repeated in the body.
        #expect(formFields(request).map(\.0) == ["grant_type", "refresh_token"])
        #expect(request.headers["Authorization"].count == 1)
    }

    @Test("oauth2 basic without a secret sends an empty password")
    func oauth2BasicNoSecret() throws {
        let request = try build(
            makeRefreshConfiguration(.oauth2(clientID: "gateway", clientSecret: nil, clientAuthentication: .basic)))
        let credentials = try #require(basicCredentials(request))
        #expect(credentials.id == "gateway")
        #expect(credentials.secret == "")
    }

    @Test("oauth2 form: client_id and client_secret in the body, no Authorization")
    func oauth2Form() throws {
        let request = try build(
            makeRefreshConfiguration(.oauth2(clientID: "my client", clientSecret: "s&e=c", clientAuthentication: .form))
        )
        #expect(request.headers["Authorization"].isEmpty)
        let fields = Dictionary(formFields(request), uniquingKeysWith: { first, _ in first })
        #expect(
            fields == [
                "grant_type": "refresh_token", "refresh_token": "rt/1+2 3", "client_id": "my client",
                "client_secret": "s&e=c",
            ])
        #expect(formFields(request).count == 4)
    }

    @Test("oauth2 form without a secret sends only client_id")
    func oauth2FormNoSecret() throws {
        let request = try build(
            makeRefreshConfiguration(.oauth2(clientID: "gateway", clientSecret: nil, clientAuthentication: .form)))
        #expect(formFields(request).map(\.0) == ["grant_type", "refresh_token", "client_id"])
    }
}
