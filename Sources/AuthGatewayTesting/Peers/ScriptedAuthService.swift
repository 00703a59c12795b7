import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

import AuthGatewayDemo
import AuthGateway

/// An auth service whose answers the test scripts, counting calls per path.
package final class ScriptedAuthService: Sendable {
    package typealias Script = @Sendable (SimpleRequest, EventLoop) -> EventLoopFuture<SimpleResponse>

    private let server: SimpleHTTPServer
    private let state: NIOLockedValueBox<(script: Script, calls: [String: Int], requests: [SimpleRequest])>

    private init(
        server: SimpleHTTPServer,
        state: NIOLockedValueBox<(script: Script, calls: [String: Int], requests: [SimpleRequest])>
    ) {
        self.server = server
        self.state = state
    }

    package static func start(_ script: @escaping Script) async throws -> ScriptedAuthService {
        let state = NIOLockedValueBox<(script: Script, calls: [String: Int], requests: [SimpleRequest])>(
            (script, [:], []))
        let server = try await SimpleHTTPServer.start(group: TestGroup.shared) { request, eventLoop in
            let script = state.withLockedValue { state -> Script in
                state.calls[request.path, default: 0] += 1
                state.requests.append(request)
                return state.script
            }
            return script(request, eventLoop)
        }
        return ScriptedAuthService(server: server, state: state)
    }

    /// Answers synchronously.
    package static func start(
        respond: @escaping @Sendable (SimpleRequest) -> SimpleResponse
    ) async throws -> ScriptedAuthService {
        try await Self.start { request, eventLoop in eventLoop.makeSucceededFuture(respond(request)) }
    }

    package var baseURL: String { self.server.baseURL }
    package var port: Int { self.server.port }

    package func calls(_ path: String) -> Int { self.state.withLockedValue { $0.calls[path] ?? 0 } }
    package var requests: [SimpleRequest] { self.state.withLockedValue { $0.requests } }

    package func script(_ script: @escaping Script) {
        self.state.withLockedValue { $0.script = script }
    }

    package func respond(_ respond: @escaping @Sendable (SimpleRequest) -> SimpleResponse) {
        self.script { request, eventLoop in eventLoop.makeSucceededFuture(respond(request)) }
    }

    package func stop() async { await self.server.close() }
}
