import AuthGatewayTesting
import Foundation
import NIOCore
import Testing

@testable import AuthGateway

/// A token exchanger (docs/token-exchange.md) on a loop of its own, with its own client for the
/// token endpoint, as a worker holds one: one "gateway instance" of these tests.
final class ExchangeInstance: Sendable {
    let loop: EventLoop
    private let bound: NIOLoopBound<(exchanger: TokenExchanger, pool: UpstreamPool)>

    init(store: ExchangeStore, endpoint: UpstreamURL, loop: EventLoop) async throws {
        self.loop = loop
        self.bound = try await loop.submit {
            let pool = UpstreamPool(
                name: "exchange", eventLoop: loop, targets: [endpoint], maxConnections: 64,
                connectTimeout: .seconds(60), tls: nil, connector: SocketConnector())
            // The client's own timeout is long: the exchange's timeoutMilliseconds is what ends a call.
            let client = UpstreamClient(pool: pool, timeout: .seconds(120), hostHeader: endpoint.hostHeader)
            let exchanger = TokenExchanger(
                store: store, clients: { $0 == endpoint ? client : nil }, metrics: nil,
                clock: { Date().timeIntervalSince1970 })
            return NIOLoopBound((exchanger, pool), eventLoop: loop)
        }.get()
    }

    func exchange(
        _ token: String, expiresAt: Double?, route: String = "orders", _ configuration: ExchangeConfiguration
    ) async throws -> Result<String, GatewayError> {
        try await self.loop.flatSubmit {
            let result = self.bound.value.exchanger.exchange(
                subjectToken: token[...], subjectExpiresAt: expiresAt, route: route, configuration: configuration,
                now: Date().timeIntervalSince1970, on: self.loop)
            switch result {
            case .ready(let exchanged): return self.loop.makeSucceededFuture(.success(exchanged))
            case .refused(let error): return self.loop.makeSucceededFuture(.failure(error))
            case .pending(let future): return future
            }
        }.get()
    }

    func stop() async {
        try? await self.loop.submit { self.bound.value.pool.shutdown() }.get()
    }
}

/// idpyoidc's OAuth 2.0 server as the token endpoint (`Fixtures/exchange/exchange_server.py`):
/// a real RFC 8693 implementation that counts the calls it gets.
struct ExchangeServer: Sendable {
    static let script = Fixtures.url("exchange/exchange_server.py").path
    let tool: BackgroundTool
    let port: Int

    static func start(blackhole: Bool = false) async throws -> ExchangeServer {
        let python = try ExternalTool.require("python3", package: "python3")
        let tool = try BackgroundTool(python, [Self.script] + (blackhole ? ["--blackhole"] : []))
        let line = try await tool.firstLine(timeout: .seconds(60))
        let port = try #require(try JSONValue(parsing: line)["port"].flatMap { $0.numberValue?.exactInt })
        return ExchangeServer(tool: tool, port: port)
    }

    var tokenEndpoint: UpstreamURL { try! UpstreamURL.parse("http://127.0.0.1:\(self.port)/token").get() }

    func get(_ path: String) async throws -> JSONValue {
        let curl = try ExternalTool.require("curl", package: "curl")
        let result = try await ExternalTool.run(
            curl, ["-sS", "--max-time", "60", "http://127.0.0.1:\(self.port)\(path)"])
        try #require(result.status == 0, "\(result.stderr)")
        return try JSONValue(parsing: result.stdout)
    }

    /// A fresh subject token idpyoidc issued, living `lifetime` seconds, and its expiry.
    func mint(lifetime: Int = 3600) async throws -> (token: String, expiresAt: Double) {
        let answer = try await self.get("/mint?lifetime=\(lifetime)")
        return (
            try #require(answer["access_token"]?.stringValue), try #require(answer["expires_at"]?.numberValue?.double)
        )
    }

    func calls() async throws -> Int { try #require(try await self.get("/count")["calls"]?.numberValue?.exactInt) }

    func configuration(audience: [String] = ["orders-api"], timeoutMilliseconds: Int = 60_000) -> ExchangeConfiguration
    {
        ExchangeConfiguration(
            tokenEndpoint: self.tokenEndpoint, clientID: "gateway", clientSecret: "gateway-secret",
            grant: .tokenExchange, audience: audience, scope: "orders.read", timeoutMilliseconds: timeoutMilliseconds)
    }
}

extension PostgreSQLTests {
    /// Exchanges against a real token-exchange server, over three instances sharing one
    /// PostgreSQL database: one call for the fleet, sealed rows, refusals and failures.
    @Suite("Token exchange against idpyoidc (PostgreSQL)", .timeLimit(.minutes(3)), .awaitsCleanups)
    struct TokenExchangeTests {
        /// Three instances on one database, each with its own exchanger on its own loop.
        func threeInstances(
            _ server: ExchangeServer
        ) async throws -> (instances: [ExchangeInstance], cluster: PostgresCluster, database: String) {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let configuration = try SharedStateTesting.configuration(cluster: cluster, database: database)
            var instances: [ExchangeInstance] = []
            for _ in 0..<3 {
                let state = try await SharedStateTesting.start(configuration)
                atTestEnd { await state.stop() }
                let instance = try await ExchangeInstance(
                    store: state.exchanges, endpoint: server.tokenEndpoint, loop: TestGroup.shared.next())
                atTestEnd { await instance.stop() }
                instances.append(instance)
            }
            return (instances, cluster, database)
        }

        @Test("200 concurrent exchanges of one subject token over three instances make one call; the rows are sealed")
        func oneCallForTheFleet() async throws {
            let server = try await ExchangeServer.start()
            atTestEnd { await server.tool.stop() }
            let (instances, cluster, database) = try await self.threeInstances(server)
            let subject = try await server.mint()
            let configuration = server.configuration()
            let results = try await withThrowingTaskGroup(of: Result<String, GatewayError>.self) { group in
                for index in 0..<200 {
                    let instance = instances[index % 3]
                    group.addTask {
                        try await instance.exchange(subject.token, expiresAt: subject.expiresAt, configuration)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(try await server.calls() == 1)
            let tokens = Set(results.compactMap { try? $0.get() })
            #expect(tokens.count == 1, "\(results.filter { (try? $0.get()) == nil })")
            let exchanged = try #require(tokens.first)
            #expect(exchanged != subject.token)
            // idpyoidc's token names the audience asked for.
            let claims = try AssertionSignerTests.decode(exchanged).claims
            #expect(claims["aud"] == ["orders-api"])
            // Later requests on any instance: no call.
            for instance in instances {
                #expect(
                    try await instance.exchange(subject.token, expiresAt: subject.expiresAt, configuration).get()
                        == exchanged)
            }
            #expect(try await server.calls() == 1)
            // Another route is another exchange.
            _ = try await instances[0].exchange(
                subject.token, expiresAt: subject.expiresAt, route: "billing", configuration)
            #expect(try await server.calls() == 2)
            // Stored sealed: the database holds the exchange's row, and neither token in clear.
            let dump = try await cluster.dump(database: database)
            let digest = TokenDigest.exchange(subjectToken: subject.token[...], route: "orders")
            #expect(dump.contains(digest.hex), "the exchange's row is stored")
            for token in [subject.token, exchanged] {
                #expect(!dump.contains(token))
                #expect(!dump.contains(String(token.prefix(40))))
                let hex = token.utf8.prefix(40).map { String(format: "%02x", $0) }.joined()
                #expect(!dump.contains(hex))
            }
        }

        @Test("after the exchanged token's expiry (less 30 s) the next request exchanges again")
        func exchangesAgainAfterExpiry() async throws {
            let server = try await ExchangeServer.start()
            atTestEnd { await server.tool.stop() }
            let (instances, _, _) = try await self.threeInstances(server)
            // idpyoidc gives the exchanged token the subject's expiry: 45 s, used for 15 s.
            let subject = try await server.mint(lifetime: 45)
            let configuration = server.configuration()
            let first = try await instances[0].exchange(subject.token, expiresAt: subject.expiresAt, configuration)
                .get()
            #expect(
                try await instances[1].exchange(subject.token, expiresAt: subject.expiresAt, configuration).get()
                    == first)
            #expect(try await server.calls() == 1)
            var again: String?
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let token = try await instances[2].exchange(subject.token, expiresAt: subject.expiresAt, configuration)
                    .get()
                if token != first {
                    again = token
                    break
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(again != nil, "a new token once the first is past its exp - 30 s")
            #expect(try await server.calls() == 2)
        }

        @Test("invalid_grant: 403 exchange.refused naming only the code; never cached")
        func refused() async throws {
            let server = try await ExchangeServer.start()
            atTestEnd { await server.tool.stop() }
            let (instances, _, _) = try await self.threeInstances(server)
            let subject = try await server.mint()
            let configuration = server.configuration(audience: ["refused-api"])
            let result = try await instances[0].exchange(subject.token, expiresAt: subject.expiresAt, configuration)
            #expect(result == .failure(.exchangeRefused("invalid_grant")))
            guard case .failure(let error) = result else { return }
            #expect(error.status == .forbidden)
            #expect(!error.problemJSON(requestID: "r").contains("audience not allowed"))
            #expect(try await server.calls() == 1)
            // Not kept: the next request asks again (on any instance).
            #expect(
                try await instances[1].exchange(subject.token, expiresAt: subject.expiresAt, configuration)
                    == .failure(.exchangeRefused("invalid_grant")))
            #expect(try await server.calls() == 2)
        }

        @Test("a killed server, and one that never answers: 503 exchange.unavailable within the timeout")
        func unavailable() async throws {
            let server = try await ExchangeServer.start()
            let store = LocalExchangeStore(clock: { Date().timeIntervalSince1970 })
            let endpoint = server.tokenEndpoint
            let instance = try await ExchangeInstance(store: store, endpoint: endpoint, loop: TestGroup.shared.next())
            atTestEnd { await instance.stop() }
            await server.tool.stop()
            #expect(
                try await instance.exchange("eyJ.any", expiresAt: nil, server.configuration())
                    == .failure(.exchangeUnavailable))

            let blackhole = try await ExchangeServer.start(blackhole: true)
            atTestEnd { await blackhole.tool.stop() }
            let hanging = try await ExchangeInstance(
                store: store, endpoint: blackhole.tokenEndpoint, loop: TestGroup.shared.next())
            atTestEnd { await hanging.stop() }
            let started = ContinuousClock.now
            #expect(
                try await hanging.exchange("eyJ.any", expiresAt: nil, blackhole.configuration(timeoutMilliseconds: 300))
                    == .failure(.exchangeUnavailable))
            let elapsed = ContinuousClock.now - started
            // The exchange's own 300 ms, not the client's 120 s.
            #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(60), "\(elapsed)")
            // Failures are not kept: a second request waits for a call of its own.
            let again = ContinuousClock.now
            #expect(
                try await hanging.exchange("eyJ.any", expiresAt: nil, blackhole.configuration(timeoutMilliseconds: 300))
                    == .failure(.exchangeUnavailable))
            #expect(ContinuousClock.now - again >= .milliseconds(300))
        }
    }
}
