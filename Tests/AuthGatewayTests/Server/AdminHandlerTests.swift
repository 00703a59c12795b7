import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import AuthGateway

/// `AdminHandler` on an embedded channel: health paths, `/metrics`, 404 for the rest.
@Suite("AdminHandler")
struct AdminHandlerTests {
    private struct Answer {
        var head: HTTPResponseHead
        var body: String
    }

    /// One request through a fresh handler; the loop runs until the answer is written.
    private static func ask(_ method: HTTPMethod, _ uri: String) throws -> Answer {
        let loop = EmbeddedEventLoop()
        let worker = try GatewayApplication.makeWorker(
            configuration: try ApplicationTesting.configuration(), eventLoop: loop, clock: { 1_000 },
            connector: SocketConnector())
        let collector = MetricsCollector(workers: [NIOLoopBound(worker, eventLoop: loop)], shared: worker.shared)
        let channel = EmbeddedChannel(handler: AdminHandler(worker: worker, metrics: collector), loop: loop)
        defer { _ = try? channel.finish() }
        try channel.writeInbound(
            HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: method, uri: uri)))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        loop.run()
        guard case .head(let head)? = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            throw AdminHandlerTestError.noHead
        }
        var body = ""
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) {
            if case .body(.byteBuffer(let buffer)) = part { body += String(buffer: buffer) }
        }
        return Answer(head: head, body: body)
    }

    private enum AdminHandlerTestError: Error { case noHead }

    @Test func metricsAreServedInPrometheusTextWithTheirLength() throws {
        let answer = try Self.ask(.GET, "/metrics?x=1")
        #expect(answer.head.status == .ok)
        #expect(answer.head.headers["Content-Type"].first?.hasPrefix("text/plain") == true)
        #expect(answer.head.headers["Content-Length"].first == String(answer.body.utf8.count))
        #expect(answer.body.contains("auth_gateway_open_connections"))
    }

    @Test func healthPathsAnswerAndHEADHasNoBody() throws {
        let live = try Self.ask(.GET, "/livez")
        #expect(live.head.status == .ok)
        #expect(live.body.contains("live"))
        let head = try Self.ask(.HEAD, "/livez")
        #expect(head.head.status == .ok)
        #expect(head.body.isEmpty)
        #expect(head.head.headers["Content-Length"].first == String(live.body.utf8.count))
    }

    @Test func anyOtherPathOrMethodIsAProblem404() throws {
        for (method, uri) in [(HTTPMethod.GET, "/"), (.GET, "/metricsx"), (.POST, "/metrics")] {
            let answer = try Self.ask(method, uri)
            #expect(answer.head.status == .notFound, "\(method) \(uri)")
            #expect(answer.head.headers["Content-Type"].first == "application/problem+json")
        }
    }
}
