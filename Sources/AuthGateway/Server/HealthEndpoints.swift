import NIOCore
import NIOHTTP1

/// `livePath`, `readyPath` and `path` (docs/operations.md), served on the main and admin listeners.
enum HealthEndpoints {
    /// The answer for a health path, or nil when `path` is not one.
    static func response(
        for path: String, method: HTTPMethod, worker: Worker, snapshot: RuntimeSnapshot
    ) -> LocalResponse? {
        guard method == .GET || method == .HEAD else { return nil }
        let paths = snapshot.configuration.health
        switch path {
        case paths.livePath:
            return .json(.ok, ["status": "live"])
        case paths.readyPath:
            let (ready, reason) = Self.readiness(worker.shared)
            return ready
                ? .json(.ok, ["status": "ready"])
                : .json(.serviceUnavailable, ["status": "not ready", "reason": .string(reason)])
        case paths.path:
            let document = Self.detail(worker: worker, snapshot: snapshot)
            let status: HTTPResponseStatus = document["status"] == .string("unavailable") ? .serviceUnavailable : .ok
            return .json(status, document)
        default:
            return nil
        }
    }

    static func readiness(_ shared: GatewayShared) -> (Bool, String) {
        if shared.health.isDraining { return (false, "draining") }
        if !shared.health.isConfigActive { return (false, "starting") }
        if !shared.keyStore.isReady { return (false, shared.keyStore.unreadyReason ?? "signing keys not loaded") }
        return (true, "ready")
    }

    /// `{"status": "ok"|"degraded"|"unavailable", "checks": {...}}`.
    static func detail(worker: Worker, snapshot: RuntimeSnapshot) -> JSONValue {
        let shared = worker.shared
        let health = shared.health
        var degraded = false

        var keys = JSONObject()
        for issuer in shared.keyStore.status {
            var entry: JSONObject = ["source": .string(issuer.source), "keys": .number(JSONNumber(issuer.keyCount))]
            if let age = issuer.ageSeconds { entry["ageSeconds"] = .number(JSONNumber(Int(age))) }
            var status = issuer.keyCount > 0 && issuer.ready ? "ok" : "unavailable"
            if let error = issuer.lastError {
                entry["lastError"] = .string(error)
                if status == "ok" { status = "degraded" }
            }
            if let discovery = issuer.discovery {
                entry["discovery"] = .object(Self.discoveryDetail(discovery))
                if discovery.lastError != nil && status == "ok" { status = "degraded" }
                // The issuer's keys come from the document: without one, its failure is why.
                if discovery.document == nil, issuer.lastError == nil, let error = discovery.lastError {
                    entry["lastError"] = .string(error)
                }
            }
            if status != "ok" { degraded = true }
            entry["status"] = .string(status)
            keys[issuer.issuer] = .object(entry)
        }

        var backends = JSONObject()
        let now = NIODeadline.now()
        for resolved in snapshot.backends {
            let backend = resolved.configuration
            var urls = JSONObject()
            var failing = 0
            // Each URL's rotation state; no URL in rotation means panic routing (docs/forwarding.md).
            let rotation = resolved.availability.states(now: now)
            for (index, url) in backend.urls.enumerated() {
                let record = health.status(of: resolved.healthKeys[index])
                var entry: JSONObject = ["status": .string(Self.label(record))]
                if let error = record?.lastError, record?.isFailing == true { entry["lastError"] = .string(error) }
                if record?.isFailing == true { failing += 1 }
                Self.describe(rotation.states[index], now: now, into: &entry)
                urls[url.description] = .object(entry)
            }
            // docs/forwarding.md: some URLs out (refusing connects, ejected, unhealthy) leave the
            // gateway `ok` — the backend's own entry says `degraded`; a backend none of whose
            // URLs can be reached, or with none in rotation (panic routing), degrades it.
            if failing == backend.urls.count { degraded = true }
            var status = failing == 0 ? "ok" : (failing == backend.urls.count ? "unavailable" : "degraded")
            var entry: JSONObject = [:]
            if !rotation.anyInRotation {
                degraded = true
                entry["panicRouting"] = true
                if status == "ok" { status = "degraded" }
            }
            entry["status"] = .string(status)
            entry["urls"] = .object(urls)
            backends[backend.name] = .object(entry)
        }

        var checks: JSONObject = [
            "config": ["status": "ok", "generation": .number(JSONNumber(Int(snapshot.generation)))],
            "keys": .object(keys),
            "backends": .object(backends),
            "draining": .bool(health.isDraining),
            "openConnections": .number(JSONNumber(shared.clientConnections.current)),
        ]
        if let authService = snapshot.configuration.authService {
            var entry = JSONObject()
            var records: [HealthState.DependencyStatus?] = []
            if let url = authService.url {
                entry["url"] = .string(url.description)
                records.append(health.status(of: DependencyKey(upstream: .authService, url: url)))
            }
            if let issuer = authService.discoveryIssuer {
                // The endpoints in use now, as the issuer's discovery document names them.
                entry["discoveryIssuer"] = .string(issuer)
                let endpoints = worker.authEndpoints
                for (name, source) in [("tokenEndpoint", endpoints.refresh), ("userinfoEndpoint", endpoints.profile)] {
                    guard case .discovered = source else { continue }
                    guard let url = endpoints.currentURL(of: source) else {
                        entry[name] = .null
                        degraded = true
                        continue
                    }
                    entry[name] = .string(url.description)
                    records.append(worker.upstreams.dependencyKey(for: url).flatMap(health.status(of:)))
                }
            }
            let failing = records.compactMap { $0 }.filter(\.isFailing)
            let known = records.contains { $0 != nil }
            entry["status"] = .string(!failing.isEmpty ? "failing" : (known ? "ok" : "unknown"))
            if let error = failing.first?.lastError { entry["lastError"] = .string(error) }
            if !failing.isEmpty { degraded = true }
            checks["authService"] = .object(entry)
        }
        if let introspector = snapshot.authentication.introspector {
            // The endpoint's last call; a failing endpoint refuses opaque tokens (503) but
            // leaves JWT requests alone, so it degrades.
            let state = introspector.endpointState
            var entry: JSONObject = [:]
            if let url = introspector.configuration.url {
                entry["url"] = .string(url.description)
            } else if let issuer = introspector.configuration.discoveryIssuer {
                entry["discoveryIssuer"] = .string(issuer)
                if let url = shared.keyStore.discoveryDocument(issuer: issuer)?.introspectionEndpoint {
                    entry["url"] = .string(url.description)
                }
            }
            let failing = state.consecutiveFailures > 0
            entry["status"] = .string(failing ? "failing" : (state.lastOutcome == nil ? "unknown" : "ok"))
            if let outcome = state.lastOutcome { entry["lastOutcome"] = .string(outcome) }
            if let at = state.lastCallAt {
                entry["lastCallAgeSeconds"] = .number(JSONNumber(Int(max(0, shared.clock() - at))))
            }
            if failing {
                entry["consecutiveFailures"] = .number(JSONNumber(state.consecutiveFailures))
                degraded = true
            }
            checks["introspection"] = .object(entry)
        }
        if let sharedState = shared.sharedState {
            // A database outage degrades (refreshes fall back to the local table); it never
            // makes the instance unready.
            let (sharedDegraded, detail) = sharedState.health
            if sharedDegraded { degraded = true }
            checks["sharedState"] = .object(detail)
        }
        let (ready, _) = Self.readiness(shared)
        let status = !ready ? "unavailable" : (degraded ? "degraded" : "ok")
        return ["status": .string(status), "checks": .object(checks)]
    }

    /// `{"url", "status", "issuer", "jwksURI", "tokenEndpoint", "userinfoEndpoint", "ageSeconds", "lastError"}`.
    private static func discoveryDetail(_ discovery: KeyStore.DiscoveryStatus) -> JSONObject {
        var entry: JSONObject = ["url": .string(discovery.documentURL.description)]
        let status = discovery.document == nil ? "unavailable" : (discovery.lastError == nil ? "ok" : "degraded")
        entry["status"] = .string(status)
        if let document = discovery.document {
            entry["jwksURI"] = .string(document.jwksURI.description)
            if let url = document.tokenEndpoint { entry["tokenEndpoint"] = .string(url.description) }
            if let url = document.userinfoEndpoint { entry["userinfoEndpoint"] = .string(url.description) }
        }
        if let age = discovery.ageSeconds { entry["ageSeconds"] = .number(JSONNumber(Int(age))) }
        if let error = discovery.lastError { entry["lastError"] = .string(error) }
        return entry
    }

    /// `state`: `healthy`, `unhealthy`, or `ejected` with `untilSeconds` (the seconds left).
    private static func describe(_ state: TargetHealth.State, now: NIODeadline, into entry: inout JSONObject) {
        switch state {
        case .healthy:
            entry["state"] = "healthy"
        case .unhealthy:
            entry["state"] = "unhealthy"
        case .ejected(let until):
            entry["state"] = "ejected"
            let seconds = Double((until - now).nanoseconds) / 1e9
            entry["untilSeconds"] = .number(JSONNumber(Int(seconds.rounded(.up))))
        }
    }

    private static func label(_ record: HealthState.DependencyStatus?) -> String {
        guard let record else { return "unknown" }
        return record.isFailing ? "failing" : "ok"
    }
}
