import Crypto
import NIOHTTP1

/// The rate limits of one configuration (docs/rate-limits.md): which tables a route's requests go
/// through, how a request's key is found, and the verdict with its headers.
///
/// Built per configuration, its tables outlive it: a reload keeps the table (the buckets) of
/// every limit that counts the same way (`RateLimitTable.countsLike`), and the HMAC key.
final class RateLimiter: Sendable {
    let tables: [RateLimitTable]
    /// The tables each route's requests go through, in configuration order. A route with
    /// no limit has no entry.
    private let tablesByRoute: [String: [RateLimitTable]]
    let hashingKey: SymmetricKey
    /// The HMAC of `hashingKey` with its pads absorbed, copied for each key made.
    private let keyedHMAC: KeyedSHA256

    /// nil when the configuration has no limits: requests then pay nothing. `syncsUsage`: the
    /// tables count admissions for the shared-state sync (with a running `sharedState`).
    static func make(
        configuration: GatewayConfiguration, keeping previous: RateLimiter?, syncsUsage: Bool = false
    ) -> RateLimiter? {
        guard !configuration.rateLimits.isEmpty else { return nil }
        let key =
            previous?.hashingKey
            ?? RateLimitKey.hashingKey(sharedStateKey: configuration.sharedState?.encryptionKey.bytes)
        return RateLimiter(
            configuration: configuration, keeping: previous?.tables ?? [], hashingKey: key, syncsUsage: syncsUsage)
    }

    init(
        configuration: GatewayConfiguration, keeping previous: [RateLimitTable] = [], hashingKey: SymmetricKey,
        syncsUsage: Bool = false
    ) {
        self.hashingKey = hashingKey
        self.keyedHMAC = KeyedSHA256(key: hashingKey)
        self.tables = configuration.rateLimits.map { limit in
            previous.first { $0.countsLike(limit) && $0.tracksUsage == syncsUsage }
                ?? RateLimitTable(configuration: limit, tracksUsage: syncsUsage)
        }
        var byRoute: [String: [RateLimitTable]] = [:]
        for route in configuration.routes {
            let tables = self.tables.filter { $0.configuration.applies(to: route.name) }
            guard !tables.isEmpty else { continue }
            byRoute[route.name] = tables
        }
        self.tablesByRoute = byRoute
    }

    /// The tables a request on `route` must pass; nil when none.
    @inline(__always)
    func tables(forRoute route: String) -> [RateLimitTable]? {
        self.tablesByRoute[route]
    }

    /// Runs a request through `tables`: every one must admit it; when one refuses, what the
    /// others admitted is given back, so a refused request consumes nothing.
    func check(
        _ tables: [RateLimitTable], route: String, fields: IdentityFields, now: UInt64, memo: RateLimitKeyMemo? = nil
    ) -> RateLimitVerdict {
        // The limit with the fewest requests left names the `RateLimit` header.
        var tightest: (table: RateLimitTable, remaining: Int, reset: Int)?
        for (index, table) in tables.enumerated() {
            switch table.consume(
                self.key(for: table.configuration.key, route: route, fields: fields, memo: memo), now: now)
            {
            case .admitted(_, let remaining, let reset):
                if tightest == nil || remaining < tightest!.remaining { tightest = (table, remaining, reset) }
            case .refused(let retryAfter):
                // Rare: the keys are made again rather than kept for every request.
                for earlier in tables[..<index] {
                    earlier.refund(self.key(for: earlier.configuration.key, route: route, fields: fields, memo: memo))
                }
                return .refused(
                    limit: table.name,
                    retryAfterSeconds: retryAfter,
                    headers: [
                        ("RateLimit-Policy", Self.policyHeader(table)),
                        ("RateLimit", Self.rateLimitHeader(table.name, remaining: 0, reset: retryAfter)),
                    ]
                )
            }
        }
        guard let tightest else { return .admitted(header: nil) }
        return .admitted(
            header: Self.rateLimitHeader(tightest.table.name, remaining: tightest.remaining, reset: tightest.reset))
    }

    // MARK: Shared state (docs/rate-limits.md, across instances)

    /// What every table admitted per key since the last call (for the sync).
    func drainUsage() -> [RateLimitUsage] {
        var usage: [RateLimitUsage] = []
        for table in self.tables {
            for (key, requests) in table.drainUsage() {
                usage.append(RateLimitUsage(limit: table.name, key: key, requests: requests))
            }
        }
        return usage
    }

    /// Debits what other instances admitted from the tables of the same name; rows for
    /// limits this configuration does not have are ignored. `now`: this process's monotonic
    /// nanoseconds, from which each row's age is counted back.
    func debit(_ rows: [RemoteRateLimitUsage], now: UInt64) {
        for row in rows {
            guard let table = self.tables.first(where: { $0.name == row.limit }) else { continue }
            let age = UInt64(max(0, row.ageMilliseconds)) * 1_000_000
            table.debit(row.key, requests: row.requests, consumedAt: now > age ? now - age : 0)
        }
    }

    /// How long a synced row matters: the longest window (burst / rate) among the limits,
    /// between 10 s and an hour.
    var usageRetentionSeconds: Int {
        min(3600, max(10, self.tables.map(\.bucket.windowSeconds).max() ?? 10))
    }

    /// The key of `request` under `kind`; a request without that value (an anonymous request
    /// under `claims.sub`) is counted under its client address.
    /// `memo`: this loop's memo of recent keys (nil: always computed).
    func key(
        for kind: RateLimitConfiguration.Key, route: String, fields: IdentityFields, memo: RateLimitKeyMemo? = nil
    ) -> RateLimitKey {
        let value: JSONValue?
        switch kind {
        case .route:
            return self.key(.route, route, memo: memo)
        case .clientIP:
            value = nil
        case .claim(let name):
            value = fields.claim(name)
        case .profile(let name):
            value = fields.profileValue(name)
        }
        if let value, let text = Self.keyText(value) {
            return self.key(.identity, text, memo: memo)
        }
        return self.key(.address, fields.request.clientIP, memo: memo)
    }

    private func key(_ kind: RateLimitKey.Kind, _ value: String, memo: RateLimitKeyMemo?) -> RateLimitKey {
        guard let memo else { return RateLimitKey(kind, value, keyed: self.keyedHMAC) }
        return memo.key(kind, value, limiter: self) { RateLimitKey(kind, value, keyed: self.keyedHMAC) }
    }

    /// The text a claim or profile value is counted under; nil for null and empty strings.
    static func keyText(_ value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .string(let text): return text.isEmpty ? nil : text
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number): return number.text
        case .array, .object: return value.jsonText
        }
    }

    /// `RateLimit-Policy: "name";q=<burst>;w=<burst / rate, seconds>`
    /// (draft-ietf-httpapi-ratelimit-headers, structured fields).
    static func policyHeader(_ table: RateLimitTable) -> String {
        "\"\(table.name)\";q=\(table.bucket.burst);w=\(table.bucket.windowSeconds)"
    }

    /// `RateLimit: "name";r=<remaining>;t=<seconds>`.
    static func rateLimitHeader(_ name: String, remaining: Int, reset: Int) -> String {
        "\"\(name)\";r=\(remaining);t=\(reset)"
    }
}

/// What a rate limit may count a request under.
enum RateLimitVerdict {
    /// Admitted by every limit; `header` is the `RateLimit` value of the tightest one.
    case admitted(header: String?)
    /// Refused by `limit`; nothing was consumed from any limit.
    case refused(limit: String, retryAfterSeconds: Int, headers: HeaderFields)
}
