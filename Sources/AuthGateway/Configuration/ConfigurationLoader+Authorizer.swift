/// Reading `authorizer` (docs/authorizer.md).
extension ConfigurationLoader {
    static func authorizer(_ root: ConfigReader) -> AuthorizerConfiguration? {
        guard let section = root.object("authorizer") else { return nil }
        defer { section.finish() }
        var configuration = AuthorizerConfiguration()
        if let prefix = section.string("pathPrefix") {
            if Self.isPlainPath(prefix) && prefix.hasSuffix("/") && prefix != "/" {
                configuration.pathPrefix = prefix
            } else {
                section.error("pathPrefix", "must be a path other than \"/\" that starts and ends with \"/\"")
            }
        }
        if let peers = section.stringArray("trustedPeers") {
            if peers.isEmpty { section.error("trustedPeers", "must name at least one address or CIDR block") }
            var networks: [CIDR] = []
            for (index, text) in peers.enumerated() {
                if let cidr = CIDR(parsing: text) {
                    networks.append(cidr)
                } else {
                    section.error("trustedPeers[\(index)]", "\"\(text)\" is not an IP address or CIDR block")
                }
            }
            configuration.trustedPeers = networks
        }
        return configuration
    }

    /// The authorizer's paths are answered before the sign-in endpoints and the routes: they
    /// must not hide the sign-in endpoints or the health paths.
    static func checkAuthorizerPaths(
        _ authorizer: AuthorizerConfiguration?, signIn: BrowserSignInConfiguration?, health: HealthConfiguration,
        root: ConfigReader
    ) {
        guard let authorizer else { return }
        if let signIn, signIn.pathPrefix.hasPrefix(authorizer.pathPrefix) {
            root.error(
                "authorizer.pathPrefix",
                "\"\(authorizer.pathPrefix)\" would hide the sign-in endpoints under browserSignIn.pathPrefix \"\(signIn.pathPrefix)\""
            )
        }
        for path in [health.path, health.readyPath, health.livePath] where path.hasPrefix(authorizer.pathPrefix) {
            root.error("authorizer.pathPrefix", "\"\(authorizer.pathPrefix)\" contains the health path \"\(path)\"")
        }
    }
}
