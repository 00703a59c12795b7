import Foundation

/// Reading `tokens`: token sources, issuers and their static keys.
extension ConfigurationLoader {
    static func tokenSources(_ section: ConfigReader, key: String) -> [TokenSourceConfiguration]? {
        guard let entries = section.objectArray(key) else { return nil }
        var sources: [TokenSourceConfiguration] = []
        for entry in entries {
            defer { entry.finish() }
            if key == "sources", let prefix = entry.string("websocketProtocol") {
                if entry.has("header") || entry.has("cookie") {
                    entry.error("a token source has one of \"header\", \"cookie\" or \"websocketProtocol\"")
                } else if prefix.isEmpty || !HTTPToken.isValid(prefix) {
                    entry.error("websocketProtocol", "\"\(prefix)\" is not a valid subprotocol prefix (a token)")
                } else {
                    sources.append(.websocketProtocol(prefix: prefix))
                }
                continue
            }
            let header = entry.string("header")
            let cookie = entry.string("cookie")
            switch (header, cookie) {
            case (let header?, nil):
                guard HTTPToken.isValid(header) else {
                    entry.error("header", "\"\(header)\" is not a valid header name")
                    continue
                }
                var bearer = true, raw = key == "sources" && header.lowercased() == "authorization"
                if key != "sources" { (bearer, raw) = (false, true) }
                if let schemes = entry.stringArray("schemes") {
                    bearer = false
                    raw = false
                    for (index, scheme) in schemes.enumerated() {
                        switch scheme.lowercased() {
                        case "bearer": bearer = true
                        case "raw": raw = true
                        default:
                            entry.error("schemes[\(index)]", "unknown scheme \"\(scheme)\" (use \"Bearer\" or \"raw\")")
                        }
                    }
                    if schemes.isEmpty { entry.error("schemes", "must list at least one scheme") }
                }
                sources.append(.header(name: header, bearer: bearer, raw: raw))
            case (nil, let cookie?):
                if cookie.isEmpty || !HTTPToken.isValid(cookie) {
                    entry.error("cookie", "\"\(cookie)\" is not a valid cookie name")
                } else {
                    sources.append(.cookie(name: cookie))
                }
            case (.some, .some):
                entry.error("a token source has either \"header\" or \"cookie\", not both")
            case (nil, nil):
                entry.error("a token source needs \"header\" or \"cookie\"")
            }
        }
        return sources
    }

    static func tokens(_ root: ConfigReader, files: FileResolver) -> TokensConfiguration? {
        let section = root.object("tokens")
        defer { section?.finish() }
        let sources = section.flatMap { Self.tokenSources($0, key: "sources") } ?? TokensConfiguration.defaultSources
        if section?.has("sources") == true && sources.isEmpty {
            section?.error("sources", "must list at least one token source")
        }
        let cacheEntries = section?.int("verifiedCacheEntries", in: 0...100_000_000) ?? 100_000
        var issuers: [IssuerConfiguration] = []
        var seen: Set<String> = []
        for entry in section?.objectArray("issuers") ?? [] {
            defer { entry.finish() }
            guard let issuer = Self.issuer(entry, files: files) else { continue }
            if !seen.insert(issuer.issuer).inserted {
                entry.error("issuer", "duplicate issuer \"\(issuer.issuer)\"")
            }
            issuers.append(issuer)
        }
        let introspection = section?.object("introspection").flatMap { entry in
            defer { entry.finish() }
            return Self.introspection(entry)
        }
        let dpop =
            section?.object("dpop").map { entry in
                defer { entry.finish() }
                return Self.dpop(entry)
            } ?? DPoPConfiguration()
        var tokens = TokensConfiguration(
            sources: sources, issuers: issuers, verifiedCacheEntries: cacheEntries, introspection: introspection,
            dpop: dpop)
        tokens.apiKeys = section?.object("apiKeys").flatMap { entry in
            defer { entry.finish() }
            return Self.apiKeys(entry, files: files, tokenSources: sources)
        }
        return tokens
    }

    static func issuer(_ entry: ConfigReader, files: FileResolver) -> IssuerConfiguration? {
        let name = entry.requiredString("issuer")
        let audiences = entry.stringArray("audiences")
        if audiences?.isEmpty == true {
            entry.error("audiences", "must not be empty (leave it out to skip the audience check)")
        }
        let leeway = entry.duration("leewaySeconds", minimum: 0) ?? 30
        let requiredClaims = entry.stringArray("requiredClaims") ?? []

        var keys: [VerificationKey] = []
        for keyEntry in entry.objectArray("keys") ?? [] {
            defer { keyEntry.finish() }
            if let key = Self.staticKey(keyEntry, files: files) { keys.append(key) }
        }
        if let jwksFile = entry.nonEmptyString("jwksFile") {
            let path = files.resolve(jwksFile)
            if let problem = files.unreadable(path) {
                entry.error("jwksFile", problem)
            } else {
                do {
                    let text = try String(contentsOfFile: path, encoding: .utf8)
                    let parsed = try JWKSet.parse(text: text)
                    if parsed.keys.isEmpty { entry.error("jwksFile", "\(path) holds no usable signature keys") }
                    keys.append(contentsOf: parsed.keys)
                } catch let error as PublicKeyError {
                    entry.error("jwksFile", "\(path): \(error.message)")
                } catch {
                    entry.error("jwksFile", "cannot read \(path): \(Self.describe(error))")
                }
            }
        }
        var seenKids: Set<String> = []
        for kid in keys.compactMap(\.kid) where !seenKids.insert(kid).inserted {
            entry.error("keys", "kid \"\(kid)\" is used by more than one key")
        }

        var jwks: RemoteJWKSConfiguration?
        let refresh = entry.duration("jwksRefreshSeconds") ?? 300
        let minRefetch = entry.duration("jwksMinRefetchSeconds") ?? 10
        let discovery = entry.bool("discovery") ?? false
        if let text = entry.nonEmptyString("jwksURL") {
            switch UpstreamURL.parse(text) {
            case .success(let url):
                jwks = RemoteJWKSConfiguration(
                    source: .url(url), refreshSeconds: refresh, minRefetchSeconds: minRefetch)
            case .failure(let reason):
                entry.error("jwksURL", "\"\(text)\" \(reason)")
            }
        }
        if discovery {
            if entry.has("jwksURL") {
                jwks = nil
                entry.error(
                    "jwksURL",
                    "cannot be set together with \"discovery\": true (the discovery document's jwks_uri is used)")
            } else if let name {
                if let documentURL = DiscoveryConfiguration.documentURL(forIssuer: name) {
                    jwks = RemoteJWKSConfiguration(
                        source: .discovery(DiscoveryConfiguration(documentURL: documentURL)), refreshSeconds: refresh,
                        minRefetchSeconds: minRefetch
                    )
                } else {
                    entry.error(
                        "issuer",
                        "\"\(name)\": discovery needs the issuer to be an http:// or https:// URL without query or fragment"
                    )
                }
            }
        }
        if !entry.has("keys") && !entry.has("jwksFile") && !entry.has("jwksURL") && !discovery {
            entry.error("an issuer needs keys, jwksFile, jwksURL or \"discovery\": true")
        }
        guard let name else { return nil }
        return IssuerConfiguration(
            issuer: name,
            audiences: audiences,
            staticKeys: keys,
            jwks: jwks,
            leewaySeconds: leeway,
            requiredClaims: requiredClaims
        )
    }

    static func staticKey(_ entry: ConfigReader, files: FileResolver) -> VerificationKey? {
        let kid = entry.nonEmptyString("kid")
        let algorithmName = entry.string("algorithm")
        let sourceKeys = ["publicKeyPEMFile", "publicKeyPEM", "publicKeyBase64", "certificatePEMFile"]
        let present = sourceKeys.filter { entry.has($0) }
        guard present.count == 1, let sourceKey = present.first else {
            for key in sourceKeys { _ = entry.value(key) }
            entry.error(
                present.isEmpty
                    ? "a key needs one of \(sourceKeys.joined(separator: ", "))"
                    : "a key takes only one of \(present.joined(separator: ", "))")
            return nil
        }
        guard let sourceValue = entry.nonEmptyString(sourceKey) else { return nil }
        let key: PublicKey
        do {
            switch sourceKey {
            case "publicKeyPEM":
                key = try PublicKey(pem: sourceValue)
            case "publicKeyBase64":
                key = try PublicKey(base64SubjectPublicKeyInfo: sourceValue)
            default:
                let path = files.resolve(sourceValue)
                if let problem = files.unreadable(path) {
                    entry.error(sourceKey, problem)
                    return nil
                }
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    entry.error(sourceKey, "cannot read \(path): not UTF-8 text")
                    return nil
                }
                key = try PublicKey(pem: text)
                if sourceKey == "certificatePEMFile" && !text.contains("BEGIN CERTIFICATE") {
                    entry.error(sourceKey, "\(path) is not a PEM certificate")
                    return nil
                }
            }
        } catch {
            entry.error(sourceKey, error.message)
            return nil
        }
        let algorithm: JWSAlgorithm
        if let algorithmName {
            guard let parsed = JWSAlgorithm(rawValue: algorithmName) else {
                let supported = JWSAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")
                entry.error("algorithm", "unsupported algorithm \"\(algorithmName)\" (supported: \(supported))")
                return nil
            }
            algorithm = parsed
        } else if let implied = JWSAlgorithm.implied(by: key.kind) {
            algorithm = implied
        } else {
            entry.error("algorithm", "is required for an RSA key (RS256, RS384, RS512, PS256, PS384 or PS512)")
            return nil
        }
        do {
            return try VerificationKey(kid: kid, algorithm: algorithm, key: key)
        } catch {
            entry.error("algorithm", error.message)
            return nil
        }
    }
}
