/// Reading `tokens.dpop` (docs/authentication.md).
extension ConfigurationLoader {
    static func dpop(_ section: ConfigReader) -> DPoPConfiguration {
        var dpop = DPoPConfiguration()
        if let names = section.stringArray("algorithms") {
            var algorithms: [JWSAlgorithm] = []
            for (index, name) in names.enumerated() {
                if let algorithm = JWSAlgorithm(rawValue: name) {
                    if !algorithms.contains(algorithm) { algorithms.append(algorithm) }
                } else {
                    // `none` and HMAC are not JWSAlgorithm cases: a proof must be asymmetric.
                    section.error(
                        "algorithms[\(index)]", "\"\(name)\" is not an asymmetric JWS algorithm the gateway verifies")
                }
            }
            if names.isEmpty { section.error("algorithms", "must list at least one algorithm") }
            dpop.algorithms = algorithms
        }
        dpop.maxAgeSeconds = section.duration("maxAgeSeconds") ?? dpop.maxAgeSeconds
        dpop.leewaySeconds = section.duration("leewaySeconds", minimum: 0) ?? dpop.leewaySeconds
        if let base = section.string("publicBaseURL") {
            switch UpstreamURL.parse(base) {
            case .success(let url) where url.pathAndQuery.isEmpty || url.pathAndQuery == "/":
                dpop.publicBaseURL = URLAuthority.normalizedOrigin(
                    scheme: url.scheme.rawValue, authority: url.hostHeader)
            case .success:
                section.error("publicBaseURL", "must be a scheme and authority only, e.g. https://api.example.com")
            case .failure(let reason):
                section.error("publicBaseURL", "\"\(base)\" \(reason.description)")
            }
        }
        // The nonce key is process-wide (`DPoPNonce.key`): nothing more to read here.
        dpop.nonce = section.bool("nonce") ?? dpop.nonce
        return dpop
    }
}
