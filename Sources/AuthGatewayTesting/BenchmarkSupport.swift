import AuthGateway
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOSSL

/// Entry points for the `Benchmarks/` package (ordo-one/benchmark). That package builds on
/// its own, so it sees only public API; these wrappers expose the hot-path pieces without
/// making the types themselves public.
public enum GatewayBenchmarkSupport {
    /// Token verification against a one-issuer key set.
    public struct Verifier: Sendable {
        let keys: KeySnapshot
        let cache: VerifiedTokenCache

        /// `keys`: (kid, algorithm name, SubjectPublicKeyInfo PEM).
        public init(issuer: String, audience: String, keys: [(kid: String, algorithm: String, pem: String)]) throws {
            let verificationKeys = try keys.map { key in
                try VerificationKey(
                    kid: key.kid, algorithm: JWSAlgorithm(rawValue: key.algorithm)!, key: PublicKey(pem: key.pem))
            }
            var byID: [String: VerificationKey] = [:]
            for key in verificationKeys { byID[key.kid!] = key }
            let entry = KeySnapshot.Issuer(
                issuer: issuer, audiences: [audience], leewaySeconds: 0, requiredClaims: [],
                keysByID: byID, keysWithoutID: [], hasRemoteKeys: false, remoteKeysFetchedAt: nil
            )
            self.keys = KeySnapshot(generation: 1, issuers: [entry])
            self.cache = VerifiedTokenCache(capacity: 1024)
        }

        /// Full signature and claims verification, no cache: true when valid.
        public func verifyUncached(_ token: String) -> Bool {
            var token = token
            return token.withUTF8 { bytes in
                if case .success = TokenVerifier.verifySignature(token: UnsafeRawBufferPointer(bytes), keys: self.keys)
                {
                    return true
                }
                return false
            }
        }

        /// Verification through the verified-token cache (a hit after the first call).
        public func verifyCached(_ token: String, now: Double) -> Bool {
            guard case .success(let verified) = self.cache.verify(token[...], keys: self.keys) else { return false }
            return verified.timeFailure(now: now) == nil
        }
    }

    /// Verification as the request path does it: through one event loop's memo
    /// (`RecentTokens`) in front of the verified-token cache.
    public final class LoopVerifier {
        private let verifier: Verifier
        private let memo = RecentTokens()

        public init(_ verifier: Verifier) { self.verifier = verifier }

        /// A memo hit from the third call on (the first verifies, the second is a cache hit).
        public func verify(_ token: String, now: Double) -> Bool {
            guard
                case .success(let verified) = self.memo.verify(
                    token[...], keys: self.verifier.keys, through: self.verifier.cache)
            else {
                return false
            }
            return verified.timeFailure(now: now) == nil
        }
    }

    /// Route matching over `count` prefix routes; returns whether `path` matched.
    public struct Routes: Sendable {
        let table: RouteTable

        public init(count: Int) {
            self.table = RouteTable(
                (0..<count).map { index in
                    RouteConfiguration(
                        name: "r\(index)", host: nil, pathMatch: .prefix("/service-\(index)/"),
                        methods: ["GET", "POST"],
                        backend: "api", auth: .required, stripPathPrefix: false, forwardAccessToken: true
                    )
                },
                backendNames: ["api"]
            )
        }

        public func match(path: String) -> Bool {
            self.table.match(host: "api.example.com", path: path, method: "GET") != nil
        }
    }

    /// Rewrites a typical request's headers for the backend; returns the header count.
    public static func rewriteHeaders(token: String) -> Int {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "api.example.com")
        headers.add(name: "User-Agent", value: "bench/1.0")
        headers.add(name: "Accept", value: "*/*")
        headers.add(name: "Authorization", value: "Bearer \(token)")
        headers.add(name: "Connection", value: "keep-alive")
        headers.add(name: "X-User-Id", value: "forged")
        let policy = Self.policy
        let rewritten = HeaderRewriter.upstreamRequestHeaders(
            headers,
            framing: .none,
            policy: policy,
            connection: ClientConnectionInfo(peerIP: "127.0.0.1", peerIsTrustedProxy: false, isTLS: false),
            requestID: "bench-request-1",
            identity: [("X-User-Subject", "user-42")],
            tokenEdits: []
        )
        return rewritten.count
    }

    private static let policy: ForwardingPolicy = {
        let configuration = try! ConfigurationLoader(environment: [:]).load(
            text: """
                {"listener":{},"backends":{"api":{"urls":["http://127.0.0.1:1"]}},
                 "routes":[{"name":"a","pathPrefix":"/","backend":"api","auth":"none"}],
                 "identityHeaders":{"X-User-Subject":"claims.sub"}}
                """,
            baseDirectory: "/"
        )
        return ForwardingPolicy(configuration: configuration)
    }()

    /// One whole request through the real client pipeline (`EmbeddedGateway`): what is
    /// measured is the gateway's own work per request, without system calls.
    public final class WholeRequest {
        private let gateway: EmbeddedGateway
        private let client: EmbeddedChannel
        private let request: ByteBuffer
        private let response: ByteBuffer

        /// `configuration`: gateway JSON whose backend `api` is never really dialled.
        /// `request` / `response`: raw HTTP/1.1 bytes of one exchange.
        public init(configuration: String, request: String, response: String, now: Double) throws {
            self.gateway = try EmbeddedGateway(configuration: configuration, clock: { now })
            self.client = try self.gateway.connectClient()
            self.request = ByteBuffer(string: request)
            self.response = ByteBuffer(string: response)
        }

        /// Runs one request; returns the status code of the response the client got.
        public func status() throws -> Int {
            try self.client.writeInbound(self.request)
            if let upstream = self.gateway.upstreams.last {
                while try upstream.readOutbound(as: ByteBuffer.self) != nil {}
                try upstream.writeInbound(self.response)
            }
            var text = ""
            while let part = try self.client.readOutbound(as: ByteBuffer.self) { text += String(buffer: part) }
            self.gateway.loop.run()
            // "HTTP/1.1 200 OK"
            return text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        }

        /// Runs one request; returns the number of response bytes the client got.
        public func run() throws -> Int {
            try self.client.writeInbound(self.request)
            guard let upstream = self.gateway.upstreams.last else { return 0 }
            while try upstream.readOutbound(as: ByteBuffer.self) != nil {}
            try upstream.writeInbound(self.response)
            var bytes = 0
            while let part = try self.client.readOutbound(as: ByteBuffer.self) { bytes += part.readableBytes }
            self.gateway.loop.run()
            return bytes
        }
    }
}
