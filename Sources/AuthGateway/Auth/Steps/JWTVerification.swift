import NIOCore
import Tracing

/// A compact JWS checked against the issuers' keys (docs/authentication.md, "Keys" and
/// "Claims"): signature and clock-independent claims through the loop's memo and the
/// process-wide cache, an unknown `kid` resolved by refetching the issuer's JWKS, and the
/// clock checked on every request.
struct JWTVerification {
    enum Outcome {
        case verified(VerifiedToken)
        case refused(GatewayError)
        /// Signed with a `kid` the issuer (whose keys come from a JWKS) does not have.
        case unknownKey(issuerIndex: Int)
    }

    /// Whether the issuer's keys may be refetched now for an unknown `kid`.
    enum Refetch {
        /// In the cooldown (`jwksMinRefetchSeconds`); `neverFetched`: the issuer's keys were
        /// never fetched at all.
        case notAllowed(neverFetched: Bool)
        /// The new keys, or nil when the fetch failed.
        case pending(EventLoopFuture<KeySnapshot?>)
    }

    let cache: VerifiedTokenCache
    /// The loop's memo in front of `cache`.
    let memo: RecentTokens
    let keyStore: KeyStore
    let eventLoop: EventLoop
    /// The loop's client for a JWKS or discovery URL's origin.
    let clients: (UpstreamURL) -> UpstreamClient?

    /// Verifies `token` against `keys`; a traced request gets a span when the signature had to
    /// be checked (a cache miss).
    func verify(_ token: Substring, keys: KeySnapshot, trace: RequestTrace?) -> Outcome {
        let result: Result<VerifiedToken, TokenRejection>
        if let trace {
            let start = DefaultTracerClock.now
            var checkedSignature = false
            result = self.memo.verify(token, keys: keys, through: self.cache, checkedSignature: &checkedSignature)
            if checkedSignature {
                let span = trace.child("auth.verify", startedAt: start)
                if case .failure(let rejection) = result {
                    span.attributes["auth.failure"] = rejection.failure.rawValue
                }
                span.end()
            }
        } else {
            result = self.memo.verify(token, keys: keys, through: self.cache)
        }
        return Self.outcome(result, keys: keys)
    }

    /// Verifies a token the gateway got itself (a refreshed one) through the shared cache only.
    func verifyFetched(_ token: Substring, keys: KeySnapshot) -> Outcome {
        Self.outcome(self.cache.verify(token, keys: keys), keys: keys)
    }

    private static func outcome(_ result: Result<VerifiedToken, TokenRejection>, keys: KeySnapshot) -> Outcome {
        switch result {
        case .success(let verified):
            return .verified(verified)
        case .failure(let rejection):
            if rejection.failure == .unknownKey, let issuerIndex = rejection.issuerIndex,
                keys.issuers[issuerIndex].hasRemoteKeys
            {
                return .unknownKey(issuerIndex: issuerIndex)
            }
            return .refused(.tokenRejected(rejection.failure))
        }
    }

    /// Refetches the issuer's keys for an unknown `kid`, once per cooldown across the process.
    func refetchKeys(issuerIndex: Int, keys: KeySnapshot) -> Refetch {
        guard
            let refetch = self.keyStore.refetchForUnknownKey(
                issuerIndex: issuerIndex, on: self.eventLoop, clients: self.clients)
        else {
            return .notAllowed(neverFetched: keys.issuers[issuerIndex].remoteKeysFetchedAt == nil)
        }
        return .pending(refetch)
    }

    /// The keys the process holds now (newer than a request's own when a refetch just ran).
    var currentKeys: KeySnapshot { self.keyStore.snapshot }
}
