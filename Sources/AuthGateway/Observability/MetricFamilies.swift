/// Every metric the gateway records, one constructor per family: the only place (with
/// `MetricName`, which names them for the exposition) where a family's name and label keys are
/// spelled — the way Envoy's jwt_authn declares its stats once. Call sites name a family and
/// pass values; label values from a closed set are enums.
extension MetricKey {
    // MARK: Requests and backends

    static func authFailure(reason: String) -> MetricKey { MetricKey(MetricName.authFailures, ["reason": reason]) }
    static func rateLimited(limit: String, route: String?) -> MetricKey {
        MetricKey(MetricName.rateLimited, ["limit": limit, "route": route ?? "-"])
    }
    /// A request target refused before anything was decided (docs/forwarding.md): by its
    /// problem type (`request.ambiguous_path`, `request.ambiguous_host`, `request.invalid_path`).
    static func targetRefused(_ error: GatewayError) -> MetricKey {
        MetricKey(MetricName.targetRefusals, ["error": error.errorType])
    }
    static func upstreamError(backend: String, _ error: GatewayError) -> MetricKey {
        MetricKey(MetricName.upstreamErrors, ["backend": backend, "kind": error.errorType])
    }
    static func upstreamDuration(backend: String) -> MetricKey {
        MetricKey(MetricName.upstreamDuration, ["backend": backend])
    }
    static func backendUp(backend: String, url: String) -> MetricKey {
        MetricKey(MetricName.backendUp, ["backend": backend, "url": url])
    }
    static func backendEjection(backend: String, url: String) -> MetricKey {
        MetricKey(MetricName.backendEjections, ["backend": backend, "url": url])
    }
    static let openConnections = MetricKey(MetricName.openConnections)
    static func http2Abuse(_ kind: HTTP2AbuseKind) -> MetricKey {
        MetricKey(MetricName.http2Abuse, ["kind": kind.rawValue])
    }

    // MARK: Tokens, keys, sessions, profiles

    static let verifiedCacheEntries = MetricKey(MetricName.verifiedCacheEntries)
    static func keySetFetch(issuer: String, _ result: FetchResult) -> MetricKey {
        MetricKey(MetricName.jwksFetches, ["issuer": issuer, "result": result.rawValue])
    }
    static func keySetAge(issuer: String) -> MetricKey { MetricKey(MetricName.jwksKeyAge, ["issuer": issuer]) }
    static func discoveryFetch(issuer: String, _ result: FetchResult) -> MetricKey {
        MetricKey(MetricName.discoveryFetches, ["issuer": issuer, "result": result.rawValue])
    }
    static func discoveryAge(issuer: String) -> MetricKey { MetricKey(MetricName.discoveryAge, ["issuer": issuer]) }
    static func refresh(outcome: String) -> MetricKey { MetricKey(MetricName.refreshes, ["outcome": outcome]) }
    static let refreshJoin = MetricKey(MetricName.refreshJoins)
    static let refreshGraceHit = MetricKey(MetricName.refreshGraceHits)
    static func introspection(outcome: String) -> MetricKey {
        MetricKey(MetricName.introspections, ["outcome": outcome])
    }
    /// Built once: counted on every request with a cached opaque token.
    static let introspectionCached = MetricKey.introspection(outcome: "cached")
    static func profileCache(_ lookup: CacheLookup) -> MetricKey {
        MetricKey(MetricName.profileCache, ["result": lookup.rawValue])
    }
    static func authServiceDuration(_ operation: AuthServiceOperation) -> MetricKey {
        MetricKey(MetricName.authServiceDuration, ["operation": operation.rawValue])
    }

    static func signIn(outcome: String) -> MetricKey { MetricKey(MetricName.signIns, ["outcome": outcome]) }
    static func signOut(_ kind: SignOutKind) -> MetricKey { MetricKey(MetricName.signOuts, ["kind": kind.rawValue]) }
    static let sessions = MetricKey(MetricName.sessions)

    // MARK: Identity for backends (docs/assertions.md, docs/token-exchange.md)

    static func exchange(route: String, _ outcome: ExchangeMetricOutcome) -> MetricKey {
        MetricKey(MetricName.exchanges, ["route": route, "outcome": outcome.rawValue])
    }
    static let assertionsSigned = MetricKey(MetricName.assertionsSigned)

    // MARK: The process

    static func configReload(_ result: ReloadResult) -> MetricKey {
        MetricKey(MetricName.configReloads, ["result": result.rawValue])
    }
    static func sharedStateError(operation: String) -> MetricKey {
        MetricKey(MetricName.sharedStateErrors, ["operation": operation])
    }
    static let sharedStateUp = MetricKey(MetricName.sharedStateUp)
    static func traceSpansDropped(_ reason: TraceDropReason) -> MetricKey {
        MetricKey(MetricName.traceSpansDropped, ["reason": reason.rawValue])
    }
}

/// How a browser session ended (`auth_gateway_sign_outs_total{kind}`).
enum SignOutKind: String, Sendable {
    /// The browser signed out (RP-initiated).
    case rp
    /// The provider's back-channel logout.
    case backchannel
    /// Idle or past its maximum age.
    case expired
    /// The provider refused the session's refresh token.
    case refreshRejected = "refresh_rejected"
}

/// How a fetch of a key set or a discovery document went.
enum FetchResult: String, Sendable {
    case updated, unchanged, error
}

/// How a cache lookup was answered.
enum CacheLookup: String, Sendable {
    case hit, stale, miss
    /// Joined a fetch already in flight.
    case coalesced
}

enum ReloadResult: String, Sendable {
    case success, failure
}

/// What the gateway asked the auth service (or the introspection endpoint).
enum AuthServiceOperation: String, Sendable {
    case refresh, profile, introspection
}

/// Why an exported span was dropped.
enum TraceDropReason: String, Sendable {
    case exportFailed = "export_failed"
    case queueFull = "queue_full"
}

/// Why an HTTP/2 client connection was closed as abusive (what NIOHTTP2 detected).
enum HTTP2AbuseKind: String, Sendable {
    case rapidReset = "rapid_reset"
    case continuationFlood = "continuation_flood"
    case controlFrameFlood = "control_frame_flood"
    case emptyDataFlood = "empty_data_flood"
    case headerBlockTooLarge = "header_block_too_large"
    case streamErrors = "stream_errors"
    case glitches
    case outboundBuffering = "outbound_buffering"
    case tooManyStreams = "too_many_streams"
    case hpackDecoding = "hpack_decoding"
}

/// How a route's token exchange was answered (`auth_gateway_exchanges_total{route,outcome}`).
enum ExchangeMetricOutcome: String, Sendable, CaseIterable {
    /// A call to the token endpoint gave a token.
    case exchanged
    /// The token endpoint refused (`exchange.refused`).
    case refused
    /// The call failed: timeout, 5xx, unreadable (`exchange.unavailable`).
    case unavailable
    /// From this loop's memo or the process's cache, without a call.
    case cached
    /// Waited for a call already in flight (this process or, with sharedState, another instance).
    case joined
}
