import NIOCore
import NIOHPACK
import NIOHTTP1

/// Translates between HTTP/2 header blocks and the HTTP/1.1-shaped heads the request phases
/// work on (RFC 9113 §8.3; "the same routing, token extraction, verification … as an HTTP/1.1
/// request", docs/http2.md). NIOHTTP2 has already refused malformed blocks (uppercase or
/// connection-specific names, CR/LF/NUL in values, bad pseudo-headers, `te` other than
/// `trailers`); what arrives here is checked again where a mistake would let one HTTP/2
/// request become two HTTP/1.1 requests (the downgrade desync class).
enum HTTP2Messages {
    /// A request as the planner sees it: its head (with `Host` from `:authority`), how its body
    /// goes to an HTTP/1.1 backend, and whether it is gRPC.
    struct Request {
        var head: HTTPRequestHead
        var framing: BodyFraming
        var isGRPC: Bool
        var grpcTimeout: TimeAmount?
    }

    /// The request HEADERS block; `endStream` when it carries no body. A header list over
    /// `maxHeaderListSize` (`limits.maxHeaderBytes`, measured as RFC 9113 §6.5.2 and NIOHPACK
    /// do: each field's name and value plus 32) is refused with 431: NIOHTTP2 holds that limit
    /// only once the client has acknowledged the gateway's SETTINGS (docs/http2.md).
    static func request(
        _ block: HPACKHeaders, endStream: Bool, maxHeaderListSize: Int, maxBodyBytes: Int
    ) -> Result<Request, GatewayError> {
        var method: String?
        var path: String?
        var authority: String?
        var headers: [(String, String)] = []
        headers.reserveCapacity(block.count + 1)
        var host: String?
        var contentLength: Int?
        var cookies: [String] = []
        var contentType: String?
        var grpcTimeout: TimeAmount?
        var listSize = 0
        for (name, value, _) in block {
            listSize += name.utf8.count + value.utf8.count + 32
            guard listSize <= maxHeaderListSize else { return .failure(.headersTooLarge) }
            guard HTTPToken.isSafeHeaderValue(value) else {
                return .failure(.malformedRequest("A header value holds a control character"))
            }
            if name.utf8.first == UInt8(ascii: ":") {
                switch name {
                case ":method": method = value
                case ":path": path = value
                case ":authority": authority = value
                case ":scheme": break
                default: return .failure(.malformedRequest("Unknown pseudo-header \(name)"))
                }
                continue
            }
            guard HTTPToken.isValid(name),
                !name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
            else {
                return .failure(.malformedRequest("Invalid header name"))
            }
            switch name {
            case "transfer-encoding", "connection", "keep-alive", "proxy-connection", "upgrade":
                // NIOHTTP2 refuses these first; a second line of defence against desync.
                return .failure(.malformedRequest("Connection-specific header \(name) in an HTTP/2 request"))
            case "content-length":
                guard let length = Int(value), length >= 0, String(length) == value,
                    contentLength == nil || contentLength == length
                else {
                    return .failure(.malformedRequest("Invalid content-length"))
                }
                contentLength = length
            case "te":
                // RFC 9113 §8.2.2: only "trailers" (then dropped as hop-by-hop).
                guard value == "trailers" else { return .failure(.malformedRequest("te other than trailers")) }
            case "host":
                // One host per request (docs/forwarding.md, "Request targets").
                guard host == nil else { return .failure(.ambiguousHost(AmbiguousHost.several.description)) }
                host = value
            case "cookie":
                // RFC 9113 §8.2.3: cookie crumbs are joined with "; " for HTTP/1.1.
                cookies.append(value)
                continue
            case "content-type":
                contentType = value
            case "grpc-timeout":
                grpcTimeout = GRPCStatus.timeout(value)
            default:
                break
            }
            headers.append((name, value))
        }
        guard let method, let path, !path.isEmpty, HTTPToken.isValid(method) else {
            return .failure(.malformedRequest("Missing or invalid :method or :path"))
        }
        // RFC 9113 §8.3.1: origin-form (or `*` for OPTIONS). An absolute-form :path would be
        // routed by its own authority while the backend gets `Host` from :authority.
        guard path.utf8.first == UInt8(ascii: "/") || (path == "*" && method == "OPTIONS") else {
            return .failure(.malformedRequest(":path is not origin-form"))
        }
        if let authority, let host {
            // Compared canonically: `Example.com.` and `example.com` name one host; two
            // different hosts would let routing and the backend each pick one.
            let same = (try? CanonicalHost.make(authority[...]).name) == (try? CanonicalHost.make(host[...]).name)
            guard same, (try? CanonicalHost.make(host[...])) != nil else {
                return .failure(.ambiguousHost(AmbiguousHost.differsFromAuthority.description))
            }
        }
        if host == nil, let authority { headers.insert(("host", authority), at: 0) }
        if !cookies.isEmpty { headers.append(("cookie", cookies.joined(separator: "; "))) }
        if let contentLength, contentLength > maxBodyBytes { return .failure(.bodyTooLarge) }
        let framing: BodyFraming
        if endStream {
            framing = .none
            if let contentLength, contentLength != 0 {
                return .failure(.malformedRequest("content-length disagrees with the body"))
            }
        } else if let contentLength {
            framing = contentLength == 0 ? .none : .contentLength(contentLength)
        } else {
            framing = .chunked
        }
        let head = HTTPRequestHead(
            version: .http1_1, method: HTTPMethod(rawValue: method), uri: path, headers: HTTPHeaders(headers))
        let isGRPC = HTTP2Fields.isGRPC(contentType: contentType)
        // `grpc-timeout` means something on gRPC calls only.
        return .success(Request(head: head, framing: framing, isGRPC: isGRPC, grpcTimeout: isGRPC ? grpcTimeout : nil))
    }

    /// The response HEADERS for a backend's response head: `:status`, the backend's
    /// end-to-end fields lower-cased, `x-request-id` (unique to the response: never worth a
    /// place in the HPACK dynamic table, where it would only evict what repeats), then
    /// `extra` (new tokens and session cookies, `RateLimit`). Secret fields (the new-token
    /// headers and `set-cookie` among them), and those an HTTP/2 backend sent never-indexed,
    /// stay out of the HPACK dynamic table (docs/http2.md).
    static func responseHeaders(
        _ head: UpstreamResponseHead, requestID: String, extra: HeaderFields,
        secrets: SecretHeaderNames, texts: inout FieldTextCache, dropsCORSFields: Bool = false
    ) -> HPACKHeaders {
        var headers = HPACKHeaders()
        // Sized before the first field: each later growth is an allocation.
        switch head {
        case .http1(let head): headers.reserveCapacity(head.fields.count + extra.count + 2)
        case .http2(let head): headers.reserveCapacity(head.fields.count + extra.count + 2)
        }
        headers.add(name: ":status", value: String(head.status))
        switch head {
        case .http1(let head):
            head.forEachEndToEndField(texts: &texts) { name, value in
                if dropsCORSFields && name.hasPrefix("access-control-") { return }
                headers.add(name: name, value: value, indexing: secrets.indexing(name))
            }
        case .http2(let head):
            for (name, value, indexing) in head.fields {
                if dropsCORSFields && name.hasPrefix("access-control-") { continue }
                headers.add(
                    name: name, value: value,
                    indexing: indexing == .neverIndexed ? .neverIndexed : secrets.indexing(name))
            }
        }
        headers.add(name: "x-request-id", value: requestID, indexing: .nonIndexable)
        for (name, value) in extra {
            let lowered = name.lowercased()
            headers.add(name: lowered, value: value, indexing: secrets.indexing(lowered))
        }
        return headers
    }

    /// The HEADERS of a response the gateway makes itself (its body follows in DATA); cookies
    /// and new tokens among its fields are never-indexed.
    static func localResponseHeaders(
        _ response: LocalResponse, requestID: String, sendsBody: Bool, secrets: SecretHeaderNames
    ) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(response.status.code))
        for (name, value) in response.headers {
            let lowered = name.lowercased()
            headers.add(name: lowered, value: value, indexing: secrets.indexing(lowered))
        }
        headers.add(name: "x-request-id", value: requestID, indexing: .nonIndexable)
        // RFC 9110 §8.6: never on a 204 (a granted CORS preflight).
        if response.status != .noContent {
            headers.add(name: "content-length", value: String(sendsBody ? response.body.utf8.count : 0))
        }
        return headers
    }
}
