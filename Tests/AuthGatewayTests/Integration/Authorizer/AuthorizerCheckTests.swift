import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Envoy's gRPC `Check` on the gateway's HTTP/2 listener with a real gRPC client (Python
/// grpcio, messages from xds-protos: `Fixtures/authz/check_client.py`): allowed with the
/// identity headers set and the forged one removed, denied with the HTTP answer and the
/// `google.rpc.Status` code, a malformed message refused with INVALID_ARGUMENT while the
/// connection keeps serving. Fails (never skips) when grpcio or xds-protos is missing.
@Suite("Authorizer: gRPC Check with grpcio (real sockets)", .awaitsCleanups, .timeLimit(.minutes(3)))
struct AuthorizerCheckTests {
    static let script = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/authz/check_client.py"
    ).path

    @Test func checkWithGrpcio() async throws {
        let gateway = try await AuthorizerHTTPTests.start()
        atTestEnd { await gateway.stop() }
        let python = try ExternalTool.require("python3", package: "python3")
        let run = try await ExternalTool.run(
            python, [Self.script, String(gateway.port), TestKeys.token()], timeout: .seconds(90))
        try #require(run.status == 0, "check_client.py exited \(run.status): \(run.stderr)")
        let results = try JSONValue(parsing: run.stdout)

        let allowed = try #require(results["allowed"])
        #expect(allowed["grpc"]?.stringValue == "OK")
        #expect(allowed["status"] == 0)
        #expect(allowed["which"]?.stringValue == "ok_response")
        #expect(allowed["headers"]?["x-user-subject"]?.stringValue == "user-42")
        #expect(allowed["remove"]?.arrayValue?.compactMap(\.stringValue).contains("x-user-subject") == true)

        let missing = try #require(results["missing"])
        #expect(missing["which"]?.stringValue == "denied_response")
        #expect(missing["status"] == 16)
        #expect(missing["deniedStatus"] == 401)
        #expect(missing["headers"]?["www-authenticate"]?.stringValue == "Bearer realm=\"auth-gateway\"")
        #expect(missing["body"]?.stringValue?.contains("token.missing") == true)

        let forbidden = try #require(results["forbidden"])
        #expect(forbidden["status"] == 7)
        #expect(forbidden["deniedStatus"] == 403)

        #expect(results["malformed"]?["grpc"]?.stringValue == "INVALID_ARGUMENT")
        #expect(results["after"]?["which"]?.stringValue == "ok_response")
        // Counted under the original request's route, as authorizer decisions.
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains(#"route="api",status_class="2xx",protocol="h2",mode="authorizer"} 3"#))
        #expect(metrics.contains(#"route="admin",status_class="2xx",protocol="h2",mode="authorizer"} 1"#))
        #expect(gateway.backend.requestCount == 0)
    }

    /// An original whose path or host is ambiguous (docs/forwarding.md, "Request targets") is a
    /// denial — HTTP 400 for the client, `status.code` 3 — never OK; a canonical spelling of
    /// the same traversal is decided on the path it names.
    @Test func ambiguousTargetsAreDenied() async throws {
        let gateway = try await AuthorizerHTTPTests.start()
        atTestEnd { await gateway.stop() }
        let python = try ExternalTool.require("python3", package: "python3")
        let run = try await ExternalTool.run(
            python, [Self.script, String(gateway.port), TestKeys.token(), "ambiguous"], timeout: .seconds(90))
        try #require(run.status == 0, "check_client.py exited \(run.status): \(run.stderr)")
        let results = try JSONValue(parsing: run.stdout)
        for name in [
            "escapedSlash", "dotParameter", "overlong", "doubleEncoded", "aboveRoot", "nonASCII", "userinfoHost",
            "emptyLabelHost", "authorityHost", "fragment",
        ] {
            let result = results[name]
            #expect(result?["grpc"]?.stringValue == "OK", "\(name): \(String(describing: result))")
            #expect(result?["which"]?.stringValue == "denied_response", "\(name): \(String(describing: result))")
            #expect(result?["deniedStatus"] == 400, "\(name)")
            #expect(result?["status"] == 3, "\(name)")
            #expect(result?["body"]?.stringValue?.contains("request.") == true, "\(name)")
        }
        #expect(results["control"]?["which"]?.stringValue == "ok_response")
        #expect(results["canonical"]?["deniedStatus"] == 403)
        #expect(results["canonical"]?["status"] == 7)
        #expect(gateway.backend.requestCount == 0)
    }
}
