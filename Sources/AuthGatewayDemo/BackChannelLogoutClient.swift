import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Posts one logout token to a relying party (OpenID Connect Back-Channel Logout 1.0 §2.5) and
/// reports the HTTP status it answered: one connection per token, `Connection: close`, and an
/// answer within `timeout` or a failure. Small on purpose: the demo sends a few of these, never
/// on a request's hot path.
enum BackChannelLogoutClient {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static let timeout: TimeAmount = .seconds(5)

    static func post(
        logoutToken: String, to uri: String, tls: NIOSSLContext?, on eventLoop: EventLoop
    ) -> EventLoopFuture<Int> {
        guard let url = URLComponents(string: uri), let host = url.host, url.scheme == "http" || url.scheme == "https"
        else {
            return eventLoop.makeFailedFuture(Failure(description: "not an http(s) URI"))
        }
        let secure = url.scheme == "https"
        let target =
            (url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath)
            + (url.percentEncodedQuery.map { "?" + $0 } ?? "")
        let authority = url.port.map { "\(host):\($0)" } ?? host
        let body = DemoForm.encode([("logout_token", logoutToken)])

        // The first of answer, connection failure and timeout completes the promise.
        let promise = eventLoop.makePromise(of: Int.self)
        let completed = NIOLockedValueBox(false)
        let finish: @Sendable (Result<Int, Error>) -> Void = { result in
            guard
                !completed.withLockedValue({ done in
                    defer { done = true }; return done
                })
            else { return }
            promise.completeWith(result)
        }
        let timer = eventLoop.scheduleTask(in: Self.timeout) {
            finish(.failure(Failure(description: "no answer within \(Self.timeout.nanoseconds / 1_000_000_000) s")))
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }

        let context: NIOSSLContext?
        do {
            context = secure ? try tls ?? NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        // SNI carries names only, never an address literal.
        let serverName = host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" } ? nil : host
        ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: context, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(StatusReader(finish: finish))
                }
            }
            .connect(host: host, port: url.port ?? (secure ? 443 : 80))
            .whenComplete { result in
                switch result {
                case .failure(let error):
                    finish(.failure(error))
                case .success(let channel):
                    let headers: HTTPHeaders = [
                        "Host": authority, "Content-Type": "application/x-www-form-urlencoded",
                        "Content-Length": String(body.utf8.count), "Connection": "close",
                    ]
                    let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: target, headers: headers)
                    channel.write(HTTPClientRequestPart.head(head), promise: nil)
                    channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: body))), promise: nil)
                    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                    promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
                }
            }
        return promise.futureResult
    }
}

/// Completes with the status of the first response, or fails when the connection ends first.
private final class StatusReader: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let finish: @Sendable (Result<Int, Error>) -> Void
    private var status: Int?

    init(finish: @escaping @Sendable (Result<Int, Error>) -> Void) {
        self.finish = finish
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.status = Int(head.status.code)
        case .body:
            break
        case .end:
            if let status = self.status { self.finish(.success(status)) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.finish(.failure(BackChannelLogoutClient.Failure(description: "the connection closed before an answer")))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        self.finish(.failure(error))
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension StatusReader: Sendable {}
