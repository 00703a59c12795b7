import Crypto
import NIOCore
import NIOHTTP1

/// OpenID Connect discovery (docs/authentication.md): an issuer with `discovery: true` has its
/// document fetched with every fetch of its keys (start-up, the periodic refresh, an unknown
/// `kid`); the document's `jwks_uri` then acts as `jwksURL`. A refused or failed document keeps the
/// last good one (and its endpoints) in force; with none yet, the issuer stays unready.
extension KeyStore {
    /// Fetches and validates `issuer`'s discovery document; the future gives the JWKS URL to
    /// fetch next (the new document's, or the last good one's after a failure), nil when there
    /// is no usable document at all.
    func fetchDiscoveryDocument(
        issuer: String, configuration: DiscoveryConfiguration, on eventLoop: EventLoop,
        clients: (UpstreamURL) -> UpstreamClient?
    ) -> EventLoopFuture<UpstreamURL?> {
        guard let client = clients(configuration.documentURL) else {
            return eventLoop.makeSucceededFuture(
                self.finishDiscovery(
                    issuer: issuer, configuration: configuration,
                    result: .failure(.unreachable("no client for \(configuration.documentURL)")), body: nil)
            )
        }
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        let request = UpstreamRequest(
            method: .GET, path: configuration.documentURL.pathAndQuery, headers: headers, body: nil)
        return client.execute(request).map { response -> UpstreamURL? in
            guard response.status == .ok else {
                return self.finishDiscovery(
                    issuer: issuer, configuration: configuration,
                    result: .failure(.http(status: Int(response.status.code))), body: nil)
            }
            let result: Result<DiscoveryDocument, DiscoveryError>
            do throws(DiscoveryError) {
                result = .success(
                    try DiscoveryDocument.parse(
                        String(buffer: response.body), expectedIssuer: issuer, requirements: configuration))
            } catch {
                result = .failure(error)
            }
            return self.finishDiscovery(
                issuer: issuer, configuration: configuration, result: result, body: response.body)
        }.recover { error in
            self.finishDiscovery(
                issuer: issuer, configuration: configuration, result: .failure(.unreachable("\(error)")), body: nil)
        }
    }

    /// Records a document or a failure; returns the JWKS URL in force afterwards.
    private func finishDiscovery(
        issuer: String, configuration: DiscoveryConfiguration, result: Result<DiscoveryDocument, DiscoveryError>,
        body: ByteBuffer?
    ) -> UpstreamURL? {
        let now = self.clock()
        let fingerprint = body.map { body in body.withUnsafeReadableBytes { SHA256.hash(data: $0) } }
        let (outcome, jwksURL): (FetchResult, UpstreamURL?) = self.state.withLockedValue { state in
            // A reload may have moved the issuer to another source while this fetch ran.
            guard var remote = state.remote[issuer], case .discovery(let current) = remote.source,
                current.documentURL == configuration.documentURL
            else {
                return (.error, nil)
            }
            var discovery = remote.discovery ?? DiscoveryState()
            defer {
                remote.discovery = discovery
                state.remote[issuer] = remote
            }
            switch result {
            case .success(let document):
                let changed = fingerprint != discovery.fingerprint || discovery.document != document
                discovery.document = document
                discovery.fingerprint = fingerprint
                discovery.fetchedAt = now
                discovery.lastError = nil
                return (changed ? .updated : .unchanged, document.jwksURI)
            case .failure(let error):
                discovery.lastError = error.description
                return (.error, discovery.document?.jwksURI)
            }
        }
        self.metrics.increment(.discoveryFetch(issuer: issuer, outcome))
        switch result {
        case .success(let document) where outcome == .updated:
            self.logger.info(
                "discovery.updated",
                metadata: ["auth.issuer": "\(issuer)", "discovery.jwks_uri": "\(document.jwksURI)"]
            )
        case .success:
            break
        case .failure(let error):
            self.logger.warning(
                "discovery.failed",
                metadata: [
                    "auth.issuer": "\(issuer)", "discovery.error": "\(error.errorType)",
                    "discovery.reason": "\(error.description)",
                    "discovery.last_good_kept": "\(jwksURL != nil)",
                ]
            )
        }
        return jwksURL
    }

    /// The accepted discovery document of `issuer` (nil before one arrived, or for an issuer
    /// without discovery). Read on the refresh and profile-fetch paths, never per request.
    func discoveryDocument(issuer: String) -> DiscoveryDocument? {
        self.state.withLockedValue { $0.remote[issuer]?.discovery?.document }
    }

    /// Every origin the accepted discovery documents point at (for keeping their clients).
    var discoveredURLs: [UpstreamURL] {
        self.state.withLockedValue { state in
            state.remote.values.compactMap(\.discovery?.document).flatMap { document in
                [document.jwksURI] + [document.tokenEndpoint, document.userinfoEndpoint].compactMap { $0 }
            }
        }
    }
}
