import Foundation
import SwiftProtobuf
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The generated messages of Envoy's ext_authz gRPC contract (`Authorizer/Generated`, from the
/// trimmed copies under `protos/`) against an independent implementation: PyPI's `xds-protos`
/// (Envoy's untrimmed .proto files through Google's protoc, on Python `protobuf`), driven by
/// `Fixtures/authz/check_messages.py` at test time. A CheckRequest Python serialized decodes here,
/// fields the trimmed files leave out included; CheckResponses encoded here decode there, with
/// nothing Python does not know and the same message from their proto3 JSON form. A missing
/// `xds-protos` fails these tests (never skips them).
@Suite("ext_authz messages against xds-protos (Python)", .timeLimit(.minutes(2)))
struct CheckMessagesWireTests {
    static let script = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/authz/check_messages.py"
    ).path

    /// Runs `check_messages.py` with `arguments`; its JSON line. Fails the test when it fails
    /// (exit status 2: xds-protos is not installed).
    static func runScript(_ arguments: [String]) async throws -> JSONValue {
        let python = try ExternalTool.require("python3", package: "python3")
        guard FileManager.default.fileExists(atPath: Self.script) else { throw ExternalTool.Missing(name: Self.script) }
        let result = try await ExternalTool.run(python, [Self.script] + arguments, timeout: .seconds(60))
        try #require(
            result.status == 0,
            "check_messages.py exited \(result.status) (run .ci/run, which installs xds-protos): \(result.stderr)")
        return try JSONValue(parsing: result.stdout)
    }

    static func bytes(hex: String) throws -> Data {
        let digits = Array(hex.utf8)
        try #require(digits.count % 2 == 0, "odd hex length \(digits.count)")
        var data = Data(capacity: digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            let byte = try #require(UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16))
            data.append(byte)
        }
        return data
    }

    static func hex(_ data: Data) -> String {
        data.map { String(format: "%02x", $0) }.joined()
    }

    static func header(
        _ key: String, _ value: String, action: Envoy_Config_Core_V3_HeaderValueOption.HeaderAppendAction
    ) -> Envoy_Config_Core_V3_HeaderValueOption {
        var option = Envoy_Config_Core_V3_HeaderValueOption()
        option.header.key = key
        option.header.value = value
        option.appendAction = action
        return option
    }

    /// A CheckRequest as Envoy sends it by default (`headers` as a map): method, path, host,
    /// scheme, headers and the source address come through; the destination's internal
    /// address and the two metadata fields, which the trimmed files do not declare, are kept as
    /// unknown fields without failing the decoding.
    @Test func aCheckRequestFromXdsProtosDecodes() async throws {
        let made = try await Self.runScript(["request"])
        let request = try Envoy_Service_Auth_V3_CheckRequest(
            serializedBytes: try Self.bytes(hex: try #require(made["plain"]?.stringValue)))

        let http = request.attributes.request.http
        #expect(http.method == "POST")
        #expect(http.path == "/api/orders?id=7&x=%2F")
        #expect(http.host == "shop.example.com")
        #expect(http.scheme == "https")
        #expect(http.protocol == "HTTP/2")
        #expect(http.id == "7b1c5f0e-2f1d-4d43-9c1a-5e1c9b1f2a00")
        #expect(http.size == 17)
        #expect(
            http.headers == [
                ":authority": "shop.example.com", ":method": "POST", ":path": "/api/orders?id=7&x=%2F",
                "authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
                "x-forwarded-for": "198.51.100.4, 203.0.113.7", "accept": "application/json, text/plain",
            ])
        #expect(!http.hasHeaderMap)

        let source = request.attributes.source
        guard case .socketAddress(let address)? = source.address.address else {
            Issue.record("source.address is not a socket address: \(source.address)")
            return
        }
        #expect(address.address == "203.0.113.7")
        #expect(address.portValue == 54321)
        #expect(address.protocol == .tcp)
        #expect(source.principal == "spiffe://cluster.local/ns/shop/sa/frontend")

        #expect(request.attributes.request.time.seconds == 1_767_225_600)
        #expect(request.attributes.request.time.nanos == 123_000_000)
        #expect(request.attributes.contextExtensions == ["route": "orders"])
        #expect(request.attributes.tlsSession.sni == "shop.example.com")

        // Left out of the trimmed files: skipped into the unknown fields, not an error.
        #expect(request.attributes.destination.hasAddress)
        #expect(request.attributes.destination.address.address == nil)
        #expect(!request.attributes.destination.address.unknownFields.data.isEmpty)
        #expect(!request.attributes.unknownFields.data.isEmpty)
    }

    /// A CheckRequest with `encode_raw_headers` (`header_map`): each header in order, repeated
    /// names kept apart, values as bytes (not UTF-8 here).
    @Test func aCheckRequestWithRawHeadersDecodes() async throws {
        let made = try await Self.runScript(["request"])
        let request = try Envoy_Service_Auth_V3_CheckRequest(
            serializedBytes: try Self.bytes(hex: try #require(made["raw"]?.stringValue)))

        let http = request.attributes.request.http
        #expect(http.headers.isEmpty)
        let headers = http.headerMap.headers
        #expect(headers.map(\.key) == [":authority", "authorization", "cookie", "cookie", "x-odd"])
        #expect(headers.map(\.value) == ["", "", "", "", ""])
        #expect(
            headers.map(\.rawValue) == [
                Data("shop.example.com".utf8), Data("Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln".utf8), Data("a=1".utf8),
                Data("b=2".utf8), Data([0x63, 0x61, 0x66, 0xE9]),
            ])
        #expect(http.method == "POST")
        #expect(http.host == "shop.example.com")
    }

    /// An allow answer: `OK`, identity headers set (overwriting), inbound headers to remove, and a
    /// cookie for the client. Python reads every field and knows all of them.
    @Test func anOKCheckResponseDecodesInXdsProtos() async throws {
        var response = Envoy_Service_Auth_V3_CheckResponse()
        response.status.code = 0
        var user = Self.header("x-auth-request-user", "alice", action: .overwriteIfExistsOrAdd)
        user.append = Google_Protobuf_BoolValue(false)
        response.okResponse.headers = [
            user, Self.header("x-auth-request-email", "alice@example.com", action: .overwriteIfExistsOrAdd),
        ]
        response.okResponse.headersToRemove = ["x-auth-request-groups", "x-refresh-token"]
        response.okResponse.responseHeadersToAdd = [
            Self.header("set-cookie", "session=abc; Path=/; HttpOnly; Secure", action: .appendIfExistsOrAdd)
        ]

        let decoded = try await Self.runScript([
            "response", Self.hex(try response.serializedBytes()), try response.jsonString(),
        ])
        #expect(decoded["which"]?.stringValue == "ok_response")
        #expect(decoded["unknownFields"] == [])
        #expect(decoded["jsonError"] == JSONValue.null)
        #expect(decoded["jsonMatches"] == true)
        let message = try #require(decoded["message"])
        // `code` 0 is the default: present as an empty status, as Envoy reads `OK`.
        #expect(message["status"] == [:])
        let ok = try #require(message["ok_response"])
        #expect(
            ok["headers"] == [
                [
                    "header": ["key": "x-auth-request-user", "value": "alice"], "append": false,
                    "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                ],
                [
                    "header": ["key": "x-auth-request-email", "value": "alice@example.com"],
                    "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                ],
            ])
        #expect(ok["headers_to_remove"] == ["x-auth-request-groups", "x-refresh-token"])
        #expect(
            ok["response_headers_to_add"]?.arrayValue?.first?["header"]?["value"]?.stringValue
                == "session=abc; Path=/; HttpOnly; Secure")
    }

    /// A refusal: the gRPC status code the contract pairs with the HTTP status (16 with 401, 7
    /// with 403, 8 with 429, 14 with 503), the HTTP status by its Envoy name, headers and body.
    @Test(arguments: [
        (Envoy_Type_V3_StatusCode.unauthorized, Int32(16), "Unauthorized"), (.forbidden, 7, "Forbidden"),
        (.tooManyRequests, 8, "TooManyRequests"), (.serviceUnavailable, 14, "ServiceUnavailable"),
    ])
    func aDeniedCheckResponseDecodesInXdsProtos(http: Envoy_Type_V3_StatusCode, grpc: Int32, name: String) async throws
    {
        let body = #"{"type":"about:blank","title":"refused","status":\#(http.rawValue)}"#
        var response = Envoy_Service_Auth_V3_CheckResponse()
        response.status.code = grpc
        response.status.message = "refused with \(http.rawValue)"
        response.deniedResponse.status.code = http
        response.deniedResponse.headers = [
            Self.header("content-type", "application/problem+json", action: .overwriteIfExistsOrAdd),
            Self.header("www-authenticate", #"Bearer error="invalid_token""#, action: .overwriteIfExistsOrAdd),
        ]
        response.deniedResponse.body = body

        let decoded = try await Self.runScript([
            "response", Self.hex(try response.serializedBytes()), try response.jsonString(),
        ])
        #expect(decoded["which"]?.stringValue == "denied_response")
        #expect(decoded["unknownFields"] == [])
        #expect(decoded["jsonError"] == JSONValue.null)
        #expect(decoded["jsonMatches"] == true)
        let message = try #require(decoded["message"])
        #expect(message["status"]?["code"] == .number(JSONNumber(Int(grpc))))
        #expect(message["status"]?["message"]?.stringValue == "refused with \(http.rawValue)")
        let denied = try #require(message["denied_response"])
        #expect(denied["status"]?["code"]?.stringValue == name)
        #expect(denied["body"]?.stringValue == body)
        #expect(
            denied["headers"] == [
                [
                    "header": ["key": "content-type", "value": "application/problem+json"],
                    "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                ],
                [
                    "header": ["key": "www-authenticate", "value": #"Bearer error="invalid_token""#],
                    "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                ],
            ])
    }
}
