import NIOHPACK

/// The header fields whose values are secrets, which HPACK must encode never-indexed (RFC 7541
/// §7.1.3; docs/http2.md, "HPACK and secrets"). One connection to an HTTP/2 backend carries many
/// users' requests: a token that entered its dynamic table could be probed for by another
/// request on it (the CRIME-class attack §7.1 describes), and an intermediary must keep the
/// never-indexed flag on every later hop. Towards clients the same rule covers the tokens and
/// cookies the gateway itself hands out.
///
/// A field is secret when its name is always secret (`authorization`, `proxy-authorization`,
/// `cookie`, `set-cookie`, `dpop`), when the configuration names it as a token carrier (access
/// and refresh token source headers, the new-token response headers), or when the peer that
/// sent it marked it never-indexed.
struct SecretHeaderNames: Sendable {
    static let always: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie", "dpop"]

    /// Lower-cased names, `always` included.
    private let names: Set<String>

    init(configured: [String] = []) {
        self.names = Self.always.union(configured.map { $0.lowercased() })
    }

    init(configuration: GatewayConfiguration) {
        var configured: [String] = []
        for source in configuration.tokens.sources {
            switch source {
            case .header(let name, _, _): configured.append(name)
            case .websocketProtocol: configured.append("sec-websocket-protocol")
            case .cookie: break
            }
        }
        if let apiKeys = configuration.tokens.apiKeys { configured.append(apiKeys.header) }
        if let refresh = configuration.authService?.refresh {
            for source in refresh.refreshTokenSources {
                if case .header(let name, _, _) = source { configured.append(name) }
            }
            if let name = refresh.accessTokenResponseHeader { configured.append(name) }
            if let name = refresh.refreshTokenResponseHeader { configured.append(name) }
        }
        self.init(configured: configured)
    }

    /// How to encode the field `loweredName`; `peerNeverIndexed` lists the names the sending
    /// peer marked never-indexed (usually empty).
    func indexing(_ loweredName: String, peerNeverIndexed: [String] = []) -> HPACKIndexing {
        if self.names.contains(loweredName) || peerNeverIndexed.contains(loweredName) { return .neverIndexed }
        return .indexable
    }

    /// The names of the fields of `block` that its sender marked never-indexed (lower-case, as
    /// HTTP/2 requires); empty, without allocating, when there are none.
    static func neverIndexedNames(in block: HPACKHeaders) -> [String] {
        var names: [String] = []
        for (name, _, indexing) in block where indexing == .neverIndexed && !names.contains(name) {
            names.append(name)
        }
        return names
    }

    /// The names of the fields of `block` that its sender marked never-indexed and that are
    /// not secret here already (those are encoded never-indexed anyway): what a request must
    /// carry to its HTTP/2 backend besides these names. Usually none — a client's own
    /// never-indexed field is its `authorization` — and then without allocating.
    func peerNeverIndexedNames(in block: HPACKHeaders) -> [String] {
        var names: [String] = []
        for (name, _, indexing) in block
        where indexing == .neverIndexed && !self.names.contains(name) && !names.contains(name) {
            names.append(name)
        }
        return names
    }
}
