import Crypto
import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

/// The limiter of one configuration (docs/rate-limits.md), without I/O: keys, fallbacks, several
/// limits on one route, refunds, the headers, keys kept as HMACs, reloads.
@Suite("RateLimiter")
struct RateLimiterTests {
    static let now: UInt64 = 5_000_000_000_000
    static let key = SymmetricKey(data: Array(repeating: UInt8(7), count: 32))

    func configuration(
        _ limits: [RateLimitConfiguration], routes: [String] = ["default", "public"]
    ) -> GatewayConfiguration {
        GatewayConfiguration(
            sourcePath: nil,
            listener: ListenerConfiguration(host: "127.0.0.1", port: 0),
            admin: nil,
            eventLoopThreads: 1,
            limits: LimitsConfiguration(),
            timeouts: TimeoutsConfiguration(),
            tokens: TokensConfiguration(
                sources: TokensConfiguration.defaultSources, issuers: [], verifiedCacheEntries: 0),
            authService: nil,
            backends: [],
            routes: routes.map {
                RouteConfiguration(
                    name: $0, host: nil, pathMatch: .prefix("/"), methods: nil, backend: "api", auth: .optional,
                    require: .empty, stripPathPrefix: false,
                    forwardAccessToken: true
                )
            },
            identityHeaders: [],
            stripInboundHeaderPrefixes: [],
            trustedProxies: [],
            health: HealthConfiguration(),
            logging: LoggingConfiguration(),
            sharedState: nil
        ).with(rateLimits: limits)
    }

    /// A request as the limiter sees it: its route's name and what `IdentityFields` reads.
    struct LimitedRequest {
        let route: String
        let fields: IdentityFields
    }

    func request(
        route: String = "default", sub: String? = nil, profile: [String: JSONValue]? = nil, peer: String = "192.0.2.1",
        xff: String? = nil, trusted: [CIDR] = []
    ) -> LimitedRequest {
        var identity: Identity?
        if sub != nil || profile != nil {
            var claims = JSONObject()
            if let sub { claims["sub"] = .string(sub) }
            let token = VerifiedToken(
                issuerIndex: 0, generation: 0, claims: claims, subject: sub, expiresAt: 2_000_000_000, notBefore: nil,
                issuedAt: nil, leewaySeconds: 0)
            identity = Identity(
                token: token,
                accessToken: ExtractedToken(value: "t", location: .header(name: "Authorization", bearer: true)),
                issuer: "test")
            if let profile {
                var object = JSONObject()
                for (name, value) in profile { object[name] = value }
                identity?.profile = object
            }
        }
        var headers = HTTPHeaders()
        if let xff { headers.add(name: "X-Forwarded-For", value: xff) }
        let isTrusted =
            (try? SocketAddress(ipAddress: peer, port: 0)).map { address in trusted.contains { $0.contains(address) } }
            ?? false
        let routeConfiguration = RouteConfiguration(
            name: route, host: nil, pathMatch: .prefix("/"), methods: nil, backend: "api", auth: .optional,
            require: .empty,
            stripPathPrefix: false, forwardAccessToken: true)
        let request = AuthRequest(
            headers: headers, route: routeConfiguration, keys: KeySnapshot(generation: 0, issuers: []), now: 0,
            connection: ClientConnectionInfo(peerIP: peer, peerIsTrustedProxy: isTrusted, isTLS: false),
            trustedProxies: trusted)
        return LimitedRequest(route: route, fields: IdentityFields(identity: identity, request: request))
    }

    /// Runs `count` requests; returns how many were admitted.
    func admitted(_ limiter: RateLimiter, _ request: LimitedRequest, count: Int, now: UInt64 = Self.now) -> Int {
        guard let tables = limiter.tables(forRoute: request.route) else { return count }
        var admitted = 0
        for _ in 0..<count {
            if case .admitted = limiter.check(tables, request: request, now: now) { admitted += 1 }
        }
        return admitted
    }

    static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test func eachUserHasTheirOwnBucket() {
        let limiter = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 3)
            ]), hashingKey: Self.key)
        #expect(self.admitted(limiter, self.request(sub: "alice"), count: 5) == 3)
        #expect(self.admitted(limiter, self.request(sub: "bob"), count: 5) == 3)
        #expect(self.admitted(limiter, self.request(sub: "alice"), count: 1, now: Self.now + 1_000_000_000) == 1)
    }

    @Test func theRefusalCarriesTheHeadersAndTheAdmissionTheTightestLimit() throws {
        let limiter = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 20, burst: 40)
            ]), hashingKey: Self.key)
        let tables = try #require(limiter.tables(forRoute: "default"))
        guard case .admitted(let header) = limiter.check(tables, request: self.request(sub: "alice"), now: Self.now)
        else {
            Issue.record("refused")
            return
        }
        #expect(header == #""per-user";r=39;t=1"#)
        #expect(self.admitted(limiter, self.request(sub: "alice"), count: 39) == 39)
        guard
            case .refused(let limit, let retryAfter, let headers) = limiter.check(
                tables, request: self.request(sub: "alice"), now: Self.now)
        else {
            Issue.record("admitted past the burst")
            return
        }
        #expect(limit == "per-user")
        #expect(retryAfter == 1)
        #expect(headers.map(\.name) == ["RateLimit-Policy", "RateLimit"])
        #expect(headers.map(\.value) == [#""per-user";q=40;w=2"#, #""per-user";r=0;t=1"#])
    }

    @Test func anonymousRequestsFallBackToTheClientAddress() {
        let limiter = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 2)
            ]), hashingKey: Self.key)
        #expect(self.admitted(limiter, self.request(peer: "192.0.2.1"), count: 3) == 2)
        #expect(self.admitted(limiter, self.request(peer: "192.0.2.2"), count: 3) == 2)
        // A user whose sub is the same text as an address has a bucket of their own.
        #expect(self.admitted(limiter, self.request(sub: "192.0.2.1", peer: "192.0.2.1"), count: 3) == 2)
    }

    @Test func aRefusalConsumesNothingFromTheOtherLimits() throws {
        let limiter = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 5),
                .init(name: "per-ip", key: .clientIP, requestsPerSecond: 1, burst: 2, routes: ["default"]),
            ]),
            hashingKey: Self.key
        )
        // Same user from one address: the per-ip limit (2) refuses the third.
        #expect(self.admitted(limiter, self.request(sub: "alice", peer: "192.0.2.1"), count: 10) == 2)
        // From another address: 2 more (that address's per-ip burst).
        #expect(self.admitted(limiter, self.request(sub: "alice", peer: "192.0.2.9"), count: 10) == 2)
        // The sixteen refusals took nothing from alice's per-user bucket (5 − 4 = 1 left): on a
        // route where only per-user applies she gets exactly one more.
        #expect(self.admitted(limiter, self.request(route: "public", sub: "alice", peer: "192.0.2.7"), count: 3) == 1)
        // The header names the limit with the fewest requests left.
        let tables = try #require(limiter.tables(forRoute: "default"))
        guard
            case .admitted(let header) = limiter.check(
                tables, request: self.request(sub: "carol", peer: "192.0.2.50"), now: Self.now)
        else {
            Issue.record("refused")
            return
        }
        #expect(header == #""per-ip";r=1;t=1"#)
    }

    @Test func routeScopingAndTheRouteKey() {
        let limiter = RateLimiter(
            configuration: self.configuration([
                .init(name: "whole", key: .route, requestsPerSecond: 1, burst: 2, routes: ["public"])
            ]), hashingKey: Self.key
        )
        #expect(limiter.tables(forRoute: "default") == nil)
        #expect(limiter.tables(forRoute: "unknown") == nil)
        #expect(self.admitted(limiter, self.request(route: "public", sub: "a", peer: "192.0.2.1"), count: 1) == 1)
        #expect(self.admitted(limiter, self.request(route: "public", sub: "b", peer: "192.0.2.2"), count: 5) == 1)
    }

    @Test func profileKeysAndNonStringValues() {
        let limiter = RateLimiter(
            configuration: self.configuration([
                .init(name: "tenant", key: .profile("tenant"), requestsPerSecond: 1, burst: 1)
            ]), hashingKey: Self.key)
        #expect(
            self.admitted(limiter, self.request(sub: "a", profile: ["tenant": .number(JSONNumber(42))]), count: 2) == 1)
        // Another user of tenant 42 shares its bucket; tenant 43 does not.
        #expect(
            self.admitted(
                limiter, self.request(sub: "b", profile: ["tenant": .number(JSONNumber(42))], peer: "192.0.2.3"),
                count: 1) == 0)
        #expect(
            self.admitted(limiter, self.request(sub: "c", profile: ["tenant": .number(JSONNumber(43))]), count: 1) == 1)
        // A null value falls back to the address.
        #expect(RateLimiter.keyText(.null) == nil)
        #expect(RateLimiter.keyText(.string("")) == nil)
        #expect(RateLimiter.keyText(.bool(true)) == "true")
    }

    /// The loop's memo gives the same keys as computing them, for values that share a slot
    /// or not, and forgets a limiter's keys when another limiter (another hashing key) asks.
    @Test func theKeyMemoGivesTheComputedKeys() {
        let limits: [RateLimitConfiguration] = [
            .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 1)
        ]
        let limiter = RateLimiter(configuration: self.configuration(limits), hashingKey: Self.key)
        let memo = RateLimitKeyMemo(slotCount: 4)
        let users = (0..<40).map { "user-\($0)@example.com" }
        for _ in 0..<3 {
            for user in users {
                let request = self.request(sub: user)
                #expect(
                    limiter.key(for: .claim("sub"), request: request, memo: memo)
                        == limiter.key(for: .claim("sub"), request: request))
            }
        }
        // A value and an address of the same text are different keys, memo or not.
        let address = limiter.key(for: .clientIP, request: self.request(sub: nil, peer: "192.0.2.9"), memo: memo)
        #expect(address == limiter.key(for: .clientIP, request: self.request(sub: nil, peer: "192.0.2.9")))
        #expect(limiter.key(for: .claim("sub"), request: self.request(sub: "192.0.2.9"), memo: memo) != address)
        let other = RateLimiter(configuration: self.configuration(limits), hashingKey: SymmetricKey(size: .bits256))
        let request = self.request(sub: users[0])
        #expect(
            other.key(for: .claim("sub"), request: request, memo: memo)
                == other.key(for: .claim("sub"), request: request))
        #expect(
            other.key(for: .claim("sub"), request: request, memo: memo)
                != limiter.key(for: .claim("sub"), request: request))
    }

    @Test func keysAreHMACsOfTheValueNeverTheValue() {
        let limiter = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 1)
            ]), hashingKey: Self.key)
        let key = limiter.key(for: .claim("sub"), request: self.request(sub: "alice@example.com"))
        var expected = HMAC<SHA256>(key: Self.key)
        expected.update(data: [RateLimitKey.Kind.identity.rawValue] + Array("alice@example.com".utf8))
        let code = Array(expected.finalize())
        #expect(key.description == Self.hex(code.prefix(16)))
        // Not a plain SHA-256 (reversible by dictionary), and another key gives another name.
        #expect(key.description != Self.hex(Array(SHA256.hash(data: Array("alice@example.com".utf8))).prefix(16)))
        let other = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 1)
            ]), hashingKey: SymmetricKey(size: .bits256))
        #expect(other.key(for: .claim("sub"), request: self.request(sub: "alice@example.com")) != key)
        // Derived from the shared-state key: the same on every instance.
        let shared = Array(repeating: UInt8(0xA5), count: 32)
        let first = RateLimitKey(.identity, "x", key: RateLimitKey.hashingKey(sharedStateKey: shared))
        let second = RateLimitKey(.identity, "x", key: RateLimitKey.hashingKey(sharedStateKey: shared))
        #expect(first == second)
    }

    @Test func leastRecentlyUsedKeysAreForgottenPastMaxKeys() throws {
        let one = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 1, maxKeys: 1)
            ]), hashingKey: Self.key
        )
        #expect(self.admitted(one, self.request(sub: "a"), count: 2) == 1)
        #expect(self.admitted(one, self.request(sub: "b"), count: 1) == 1)
        #expect(try #require(one.tables(forRoute: "default")?.first).count == 1)
        // "a" was forgotten for "b": a full bucket again.
        #expect(self.admitted(one, self.request(sub: "a"), count: 2) == 1)
        // Sharded, the bound holds in total.
        let many = RateLimiter(
            configuration: self.configuration([
                .init(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 1, maxKeys: 100)
            ]), hashingKey: Self.key
        )
        for user in 0..<1000 { _ = self.admitted(many, self.request(sub: "user-\(user)"), count: 1) }
        let count = try #require(many.tables(forRoute: "default")?.first).count
        #expect(count <= 100 && count > 0, "\(count)")
    }

    @Test func aReloadKeepsTheBucketsOfUnchangedLimits() {
        let perUser = RateLimitConfiguration(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 2)
        let perIP = RateLimitConfiguration(name: "per-ip", key: .clientIP, requestsPerSecond: 1, burst: 2)
        let first = RateLimiter.make(configuration: self.configuration([perUser, perIP]), keeping: nil)!
        #expect(self.admitted(first, self.request(sub: "alice"), count: 2) == 2)
        var changedIP = perIP
        changedIP.burst = 3
        var rescoped = perUser
        rescoped.routes = ["default"]
        let second = RateLimiter.make(configuration: self.configuration([rescoped, changedIP]), keeping: first)!
        #expect(second.hashingKey.withUnsafeBytes { Array($0) } == first.hashingKey.withUnsafeBytes { Array($0) })
        #expect(second.tables[0] === first.tables[0])
        #expect(second.tables[1] !== first.tables[1])
        // alice's bucket survived; the changed per-ip limit starts afresh (3 from the address).
        #expect(self.admitted(second, self.request(sub: "alice"), count: 1) == 0)
        #expect(self.admitted(second, self.request(sub: "bob"), count: 5) == 2)
        #expect(RateLimiter.make(configuration: self.configuration([]), keeping: second) == nil)
    }

    @Test func clientAddressBehindTrustedProxies() {
        let trusted = [CIDR(parsing: "10.0.0.0/8")!]
        func resolve(peer: String, xff: String?) -> String {
            self.request(peer: peer, xff: xff, trusted: trusted).fields.request.clientIP
        }
        // An untrusted peer's X-Forwarded-For is ignored.
        #expect(resolve(peer: "192.0.2.1", xff: "203.0.113.5") == "192.0.2.1")
        // Behind a trusted proxy: the first untrusted hop from the right.
        #expect(resolve(peer: "10.0.0.1", xff: "198.51.100.1, 203.0.113.5") == "203.0.113.5")
        #expect(resolve(peer: "10.0.0.1", xff: "198.51.100.1, 203.0.113.5, 10.1.2.3") == "203.0.113.5")
        // Only trusted hops: the leftmost; none at all: the peer.
        #expect(resolve(peer: "10.0.0.1", xff: "10.9.9.9, 10.1.1.1") == "10.9.9.9")
        #expect(resolve(peer: "10.0.0.1", xff: nil) == "10.0.0.1")
    }
}

extension GatewayConfiguration {
    fileprivate func with(rateLimits: [RateLimitConfiguration]) -> GatewayConfiguration {
        var copy = self
        copy.rateLimits = rateLimits
        return copy
    }
}

extension RateLimiter {
    /// The tests' shorthand for `check(_:route:fields:now:memo:)`.
    func check(
        _ tables: [RateLimitTable], request: RateLimiterTests.LimitedRequest, now: UInt64, memo: RateLimitKeyMemo? = nil
    ) -> RateLimitVerdict {
        self.check(tables, route: request.route, fields: request.fields, now: now, memo: memo)
    }

    /// The tests' shorthand for `key(for:route:fields:memo:)`.
    func key(
        for kind: RateLimitConfiguration.Key, request: RateLimiterTests.LimitedRequest, memo: RateLimitKeyMemo? = nil
    ) -> RateLimitKey {
        self.key(for: kind, route: request.route, fields: request.fields, memo: memo)
    }
}
