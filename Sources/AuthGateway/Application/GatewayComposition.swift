import Logging
import NIOCore

/// The composition root: what a validated configuration builds. The process-wide parts
/// (`GatewayShared`), the parts a reload keeps while their section is unchanged
/// (`ReloadableParts`) and the per-configuration `RuntimeSnapshot` the event loops read.
/// `GatewayApplication` (the listening process) and the one-worker harness of
/// `AuthGatewayTesting` both build through here, so they build the same gateway.
enum GatewayComposition {
    /// What all event loops share, as `serve` builds it; keys reach the loops through
    /// `publisher`. The refresh store and the browser sessions are shared through PostgreSQL
    /// when `sharedState` is configured and there is an event loop group to run its client on
    /// (not in the embedded one-worker harness), else process-local.
    static func makeShared(
        _ configuration: GatewayConfiguration, clock: @escaping @Sendable () -> Double, logger: Logger,
        connector: UpstreamConnector, publisher: KeyPublisher,
        group: EventLoopGroup?, tracing: GatewayTracing? = nil, processMetrics: ProcessMetrics = ProcessMetrics()
    ) throws -> GatewayShared {
        let keyStore = KeyStore(
            configuration: configuration.tokens, metrics: processMetrics, clock: clock, logger: logger
        ) { snapshot in
            publisher.publish(snapshot)
        }
        // A discovery document may name https endpoints whatever the issuer's scheme. Backends
        // have their own TLS (`UpstreamTLS.backends`): the auth service's CA is not theirs.
        let usesTLSUpstream =
            configuration.authService?.url?.isTLS == true || configuration.tokens.introspection?.url?.isTLS == true
            || configuration.tokens.issuers.contains { $0.jwks?.url?.isTLS == true || $0.jwks?.discovery != nil }
            || configuration.routes.contains { $0.exchange?.tokenEndpoint.isTLS == true }
        let clientTLS =
            usesTLSUpstream
            ? try GatewayShared.makeClientTLS(caFile: configuration.authService?.caCertificatePEMFile) : nil
        let sessionCapacity = configuration.browserSignIn?.maxSessions ?? 100_000
        // Told of every session's end, so that its streams close (docs/streams.md).
        let streams = StreamDirectory()
        let sharedState = try configuration.sharedState.flatMap { sharedState in
            try group.map {
                try PostgresSharedState(
                    configuration: sharedState, eventLoopGroup: $0, metrics: processMetrics, logger: logger,
                    sessionCapacity: sessionCapacity, clock: clock, sessionObserver: streams)
            }
        }
        let authentication = AuthenticationState(
            keyStore: keyStore,
            verifiedTokens: VerifiedTokenCache(capacity: configuration.tokens.verifiedCacheEntries),
            dpopNonceKey: DPoPNonce.key(sharedSecret: configuration.sharedState?.encryptionKey),
            sharedDPoPReplay: sharedState?.dpopReplay,
            sessions: sharedState?.sessions ?? LocalSessionStore(capacity: sessionCapacity, observer: streams),
            signInFlowKey: SignInFlowSealer.key(sharedStateKey: configuration.sharedState?.encryptionKey.bytes),
            refreshStore: sharedState?.store ?? LocalRefreshStore(clock: clock),
            exchangeStore: sharedState?.exchanges ?? LocalExchangeStore(clock: clock))
        return GatewayShared(
            authentication: authentication,
            health: HealthState(),
            processMetrics: processMetrics,
            clock: clock,
            clientTLS: clientTLS,
            connector: connector,
            tracing: tracing,
            sharedState: sharedState,
            logger: logger,
            streams: streams
        )
    }

    /// The parts of a configuration that keep what they learned across reloads while their
    /// section is unchanged: the profile cache (docs/operations.md), the introspector's cache, the
    /// rate limiter's buckets (docs/rate-limits.md).
    struct ReloadableParts {
        var profiles: ProfileCache?
        var introspector: TokenIntrospector?
        var rateLimiter: RateLimiter?
        var browserSignIn: BrowserSignIn?
    }

    /// The reloadable parts for `configuration`, keeping those of `previous` whose section is
    /// unchanged. The rate limiter syncs its usage through the shared state when there is one
    /// (which then reads it).
    static func reloadableParts(
        for configuration: GatewayConfiguration, keeping previous: ReloadableParts?, shared: GatewayShared
    ) -> ReloadableParts {
        let parts = ReloadableParts(
            profiles: Self.profileCache(for: configuration, keeping: previous?.profiles, shared: shared),
            introspector: Self.introspector(for: configuration, keeping: previous?.introspector, shared: shared),
            rateLimiter: RateLimiter.make(
                configuration: configuration, keeping: previous?.rateLimiter, syncsUsage: shared.sharedState != nil),
            browserSignIn: Self.browserSignIn(for: configuration, keeping: previous?.browserSignIn, shared: shared)
        )
        shared.sharedState?.attachRateLimiter(parts.rateLimiter)
        // The sessions' rows expire by the current lifetime; without `browserSignIn` a missing
        // sessions table does not degrade `/healthz`.
        shared.sharedState?.sessions.lifetime = parts.browserSignIn?.lifetime
        return parts
    }

    /// The refresher is rebuilt for each configuration; what it has learned lives in the
    /// application's refresh store, which every configuration shares.
    static func makeSnapshot(
        _ configuration: GatewayConfiguration, generation: UInt64, shared: GatewayShared, parts: ReloadableParts,
        backendTLS: [UpstreamTLS?]
    ) -> RuntimeSnapshot {
        let refresher = configuration.authService.flatMap { authService in
            authService.refresh.map {
                SessionRefresher(
                    configuration: $0, callTimeoutMilliseconds: authService.timeoutMilliseconds,
                    store: shared.authentication.refreshStore,
                    metrics: shared.processMetrics, clock: shared.clock
                )
            }
        }
        let signIn = parts.browserSignIn.flatMap { browserSignIn in
            Self.sessionRefresher(for: configuration, shared: shared).map {
                SignInFeature(browserSignIn: browserSignIn, refresher: $0)
            }
        }
        let authentication = AuthenticationFeatures(
            refresh: refresher, signIn: signIn, introspector: parts.introspector, profiles: parts.profiles,
            apiKeys: configuration.tokens.apiKeys.map(APIKeyTable.init),
            assertionJWKSPath: configuration.identityAssertion.map { _ in AssertionJWKSEndpoint.mainPath(configuration)
            })
        return RuntimeSnapshot(
            configuration: configuration, generation: generation, authentication: authentication,
            rateLimiter: parts.rateLimiter,
            signals: Self.signalReceiver(for: configuration, shared: shared, parts: parts),
            backendTLS: backendTLS,
            backendAvailability: shared.backendAvailabilities.update(for: configuration)
        )
    }

    /// The Shared Signals receiver of `configuration` (docs/streams.md): its `jti`s are used
    /// once with back-channel logout's replay cache (fleet-wide with `sharedState`), and what
    /// it acts on is the application's sessions and the configuration's caches.
    static func signalReceiver(
        for configuration: GatewayConfiguration, shared: GatewayShared, parts: ReloadableParts
    ) -> SignalReceiver? {
        configuration.signals.map {
            SignalReceiver(
                configuration: $0, sessions: shared.authentication.sessions, seen: shared.authentication.dpopReplay,
                sharedSeen: shared.authentication.sharedDPoPReplay,
                caches: SubjectCaches(
                    verifiedTokens: shared.authentication.verifiedTokens, introspector: parts.introspector,
                    profiles: parts.profiles, refreshStore: shared.authentication.refreshStore,
                    exchangeStore: shared.authentication.exchangeStore,
                    subjectChanges: shared.authentication.subjectChanges),
                metrics: shared.processMetrics, clock: shared.clock)
        }
    }

    /// Redeems browser sessions' refresh tokens at the provider's `token_endpoint` (OAuth 2,
    /// `browserSignIn`'s client), through the application's refresh store like any refresh.
    static func sessionRefresher(for configuration: GatewayConfiguration, shared: GatewayShared) -> SessionRefresher? {
        guard let signIn = configuration.browserSignIn else { return nil }
        let refresh = RefreshConfiguration(
            protocol: .oauth2(
                clientID: signIn.clientID, clientSecret: signIn.clientSecret,
                clientAuthentication: signIn.clientAuthentication),
            path: nil, accessTokenField: "access_token", refreshTokenField: "refresh_token", refreshTokenSources: [],
            accessTokenResponseHeader: nil, refreshTokenResponseHeader: nil,
            maxExpiredSeconds: signIn.sessionMaxSeconds,
            graceSeconds: configuration.authService?.refresh?.graceSeconds ?? 30)
        return SessionRefresher(
            configuration: refresh, callTimeoutMilliseconds: configuration.authService?.timeoutMilliseconds ?? 3000,
            store: shared.authentication.refreshStore, metrics: shared.processMetrics, clock: shared.clock)
    }

    /// Browser sign-in for `configuration`: the existing one while `browserSignIn` is unchanged
    /// (its flow key: flows in progress still finish), else a new one (or none). Sessions live
    /// in `shared.sessions` either way, so a reload signs nobody out.
    static func browserSignIn(
        for configuration: GatewayConfiguration, keeping existing: BrowserSignIn?, shared: GatewayShared
    ) -> BrowserSignIn? {
        guard let signIn = configuration.browserSignIn else { return nil }
        if let existing, existing.configuration == signIn { return existing }
        return BrowserSignIn(
            configuration: signIn, sessions: shared.authentication.sessions,
            flowKey: shared.authentication.signInFlowKey,
            keyStore: shared.keyStore, seen: shared.authentication.dpopReplay,
            sharedSeen: shared.authentication.sharedDPoPReplay,
            metrics: shared.processMetrics, clock: shared.clock)
    }

    /// The introspector for `configuration`: the existing one (its cache) while
    /// `tokens.introspection` is unchanged, else a new one (or none).
    static func introspector(
        for configuration: GatewayConfiguration, keeping existing: TokenIntrospector?, shared: GatewayShared
    ) -> TokenIntrospector? {
        guard let introspection = configuration.tokens.introspection else { return nil }
        if let existing, existing.configuration == introspection { return existing }
        return TokenIntrospector(
            configuration: introspection, capacity: max(configuration.tokens.verifiedCacheEntries, 1000),
            metrics: shared.processMetrics,
            shared: shared.sharedState?.introspections, clock: shared.clock
        )
    }

    /// The profile cache for `configuration`: the existing one while the profile section is
    /// unchanged, else a new one (or none).
    static func profileCache(
        for configuration: GatewayConfiguration, keeping existing: ProfileCache?, shared: GatewayShared
    ) -> ProfileCache? {
        guard let profile = configuration.authService?.profile else { return nil }
        if let existing, existing.profileConfiguration == profile { return existing }
        return ProfileCache(configuration: profile, metrics: shared.processMetrics, clock: shared.clock)
    }

    /// `tls.insecureSkipVerify` is loud: a warning per backend at every start and reload; so
    /// are the configuration's other `warnings` (`check` prints them too).
    static func warnAboutInsecureBackends(_ configuration: GatewayConfiguration, logger: Logger) {
        for backend in configuration.backends where backend.tls?.insecureSkipVerify == true {
            logger.warning(
                "backend.tls_verification_off",
                metadata: [
                    "backend": "\(backend.name)",
                    "reason": "tls.insecureSkipVerify is true: the backend's certificate is not verified",
                ]
            )
        }
        for warning in configuration.warnings {
            logger.warning("config.warning", metadata: ["reason": "\(warning)"])
        }
    }
}

extension GatewayApplication {
    /// One worker built exactly as `serve` builds each of its loops' workers, on `eventLoop`
    /// (an `EmbeddedEventLoop` in the in-process harness of `AuthGatewayTesting`), opening
    /// upstream connections with `connector` and logging through `logger`. Must be called on
    /// `eventLoop`.
    package static func makeWorker(
        configuration: GatewayConfiguration, eventLoop: EventLoop, clock: @escaping @Sendable () -> Double,
        connector: UpstreamConnector, logger: Logger
    ) throws -> Worker {
        let publisher = KeyPublisher()
        let shared = try GatewayComposition.makeShared(
            configuration, clock: clock, logger: logger, connector: connector, publisher: publisher, group: nil
        )
        let parts = GatewayComposition.reloadableParts(for: configuration, keeping: nil, shared: shared)
        let snapshot = GatewayComposition.makeSnapshot(
            configuration, generation: 1, shared: shared, parts: parts,
            backendTLS: try UpstreamTLS.backends(configuration))
        let worker = Worker(eventLoop: eventLoop, shared: shared, snapshot: snapshot)
        publisher.attach([NIOLoopBound(worker, eventLoop: eventLoop)])
        shared.streams.attach([NIOLoopBound(worker.streams, eventLoop: eventLoop)])
        return worker
    }
}
