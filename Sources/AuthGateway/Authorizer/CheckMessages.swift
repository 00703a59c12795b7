import Foundation
import NIOCore
import NIOHTTP1
import SwiftProtobuf

/// Envoy's gRPC `Check` (docs/authorizer.md) as pure conversions: a unary call's
/// length-prefixed message, `CheckRequest` → `OriginalRequest`, an answer → `CheckResponse`.
/// No I/O; the gateway's own HTTP/2 path carries the call.
enum CheckMessages {
    /// The one message of a unary gRPC request body: 5 bytes (uncompressed flag, big-endian
    /// length) then exactly that many bytes; nil for anything else.
    static func message(in body: ByteBuffer) -> ByteBuffer? {
        var body = body
        guard let flag = body.readInteger(as: UInt8.self), flag == 0,
            let length = body.readInteger(endianness: .big, as: UInt32.self), Int(length) == body.readableBytes
        else { return nil }
        return body
    }

    /// `message` as a unary gRPC response body.
    static func frame(_ message: some SwiftProtobuf.Message) -> ByteBuffer {
        let bytes: [UInt8] = (try? message.serializedBytes()) ?? []
        var buffer = ByteBuffer()
        buffer.reserveCapacity(5 + bytes.count)
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(UInt32(bytes.count), endianness: .big)
        buffer.writeBytes(bytes)
        return buffer
    }

    /// The original request a `CheckRequest` describes. `peerIP`: the caller's address, the
    /// client's when the request names no `source.address`.
    static func original(
        _ request: Envoy_Service_Auth_V3_CheckRequest, peerIP: String
    ) -> Result<
        OriginalRequest, AuthorizerCallError
    > {
        let http = request.attributes.request.http
        guard !http.method.isEmpty else { return .failure(.missing("attributes.request.http.method")) }
        guard let method = OriginalRequest.method(http.method) else {
            return .failure(.invalid("attributes.request.http.method"))
        }
        guard http.path.hasPrefix("/") else { return .failure(.missing("attributes.request.http.path")) }
        let scheme = http.scheme.isEmpty ? (http.headers[":scheme"] ?? "http") : http.scheme.lowercased()
        guard scheme == "http" || scheme == "https" else { return .failure(.invalid("attributes.request.http.scheme")) }
        let hostText = http.host.isEmpty ? http.headers[":authority"] ?? http.headers["host"] : http.host
        // Made canonical, or refused as ambiguous, with the path (`RequestTarget`).
        let host = hostText.flatMap { $0.isEmpty ? nil : $0 }
        var fields: [(String, String)] = []
        // Envoy's map has one entry per name (repeated fields joined with ","), or with
        // `encode_raw_headers` the list in `header_map`; pseudo-headers describe the request
        // line, already taken above.
        let pairs: [(String, String)] =
            http.headers.isEmpty
            ? http.headerMap.headers.map {
                ($0.key, $0.value.isEmpty ? String(decoding: $0.rawValue, as: UTF8.self) : $0.value)
            }
            : http.headers.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }
        for (name, value) in pairs where !name.hasPrefix(":") {
            guard HTTPToken.isValid(name), !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                return .failure(.invalid("attributes.request.http.headers"))
            }
            fields.append((name, value))
        }
        let socket = request.attributes.source.address.socketAddress.address
        var clientIP = socket.isEmpty ? peerIP : socket
        if let address = try? SocketAddress(ipAddress: clientIP, port: 0), let normalized = address.ipAddress {
            clientIP = normalized
        }
        return .success(
            OriginalRequest(
                method: method, scheme: scheme, host: host, uri: http.path,
                headers: OriginalRequest.originalHeaders(HTTPHeaders(fields), host: host), clientIP: clientIP))
    }

    /// `OK` with `ok_response`: `headers` set (overwriting) on the upstream request,
    /// `remove` taken off it, `responseHeaders` added to the client's response.
    static func allowed(
        headers: HeaderFields, remove: [String], responseHeaders: HeaderFields
    ) -> Envoy_Service_Auth_V3_CheckResponse {
        var response = Envoy_Service_Auth_V3_CheckResponse()
        response.status.code = 0
        var ok = Envoy_Service_Auth_V3_OkHttpResponse()
        ok.headers = headers.map { Self.option($0.name, $0.value, .overwriteIfExistsOrAdd) }
        ok.headersToRemove = remove
        ok.responseHeadersToAdd = responseHeaders.map { Self.option($0.name, $0.value, .appendIfExistsOrAdd) }
        response.okResponse = ok
        return response
    }

    /// `denied_response` with the client's answer, and the `google.rpc.Status` code of its
    /// status: 16 (401), 7 (403), 8 (429), 14 (503 and any other failure), 3 (400).
    static func denied(
        status: Int, headers: HeaderFields, body: String, message: String
    ) -> Envoy_Service_Auth_V3_CheckResponse {
        var response = Envoy_Service_Auth_V3_CheckResponse()
        response.status.code = Self.rpcCode(status: status)
        response.status.message = message
        var denied = Envoy_Service_Auth_V3_DeniedHttpResponse()
        denied.status.code = Envoy_Type_V3_StatusCode(rawValue: status) ?? .forbidden
        denied.headers = headers.map { Self.option($0.name, $0.value, .appendIfExistsOrAdd) }
        denied.body = body
        response.deniedResponse = denied
        return response
    }

    /// The `google.rpc.Status` code of a denial: as any gRPC answer of the gateway's.
    static func rpcCode(status: Int) -> Int32 { Int32(GRPCStatusCode.forHTTPStatus(status)) }

    private static func option(
        _ name: String, _ value: String, _ action: Envoy_Config_Core_V3_HeaderValueOption.HeaderAppendAction
    ) -> Envoy_Config_Core_V3_HeaderValueOption {
        var option = Envoy_Config_Core_V3_HeaderValueOption()
        option.header.key = name.lowercased()
        option.header.value = value
        option.appendAction = action
        return option
    }
}
