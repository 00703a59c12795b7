import Foundation
import Testing

@testable import AuthGateway

/// `routes[].streams`, `signals` and the `websocketProtocol` token source (docs/streams.md):
/// defaults, and every field checked with its JSON path.
@Suite("ConfigurationLoader: streams, signals, websocketProtocol")
struct ConfigurationLoaderStreamsTests {
    func load(
        route: String = "", extra: String = "", sources: String? = nil
    ) -> Result<
        GatewayConfiguration, ConfigurationError
    > {
        let text = """
            {
              "listener": { "port": 8080 },
              "tokens": { \(sources.map { "\"sources\": \($0)," } ?? "")
                          "issuers": [ { "issuer": "https://idp.test", "jwksURL": "https://idp.test/jwks.json" } ] },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "live", "pathPrefix": "/", "backend": "api" \(route) } ]
              \(extra)
            }
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/nonexistent"))
        } catch {
            return .failure(error)
        }
    }

    func issues(route: String = "", extra: String = "", sources: String? = nil) -> [String] {
        if case .failure(let error) = self.load(route: route, extra: extra, sources: sources) {
            return error.issues.map(\.description)
        }
        return []
    }

    @Test func streamsDefaultsAndValues() throws {
        #expect(try self.load().get().routes[0].streams == StreamsConfiguration(closeAtExpiry: true, leewaySeconds: 30))
        let set = try self.load(route: #", "streams": {"closeAtExpiry": false, "leewaySeconds": 0}"#).get()
        #expect(set.routes[0].streams == StreamsConfiguration(closeAtExpiry: false, leewaySeconds: 0))
        #expect(
            self.issues(route: #", "streams": {"leewaySeconds": -1}"#).contains {
                $0.hasPrefix("routes[0].streams.leewaySeconds:")
            })
        #expect(self.issues(route: #", "streams": {"closeAt": true}"#) == ["routes[0].streams.closeAt: unknown key"])
    }

    @Test func signalsDefaultsAndChecks() throws {
        let signals = try #require(
            try self.load(extra: #", "signals": {"issuer": "https://idp.test", "audience": "gw"}"#).get().signals)
        #expect(signals.path == "/.gateway/signals" && signals.trustedPeers == nil && signals.maxAgeSeconds == 300)
        let peers = try #require(
            try self.load(
                extra: #", "signals": {"issuer": "https://idp.test", "audience": "gw", "trustedPeers": ["10.0.0.0/8"]}"#
            ).get().signals)
        #expect(peers.trustedPeers?.map(\.description) == ["10.0.0.0/8"])
        let cases: [(String, String)] = [
            (#"{"audience": "gw"}"#, "signals.issuer: is required"),
            (#"{"issuer": "https://other.test", "audience": "gw"}"#, "signals.issuer:"),
            (#"{"issuer": "https://idp.test"}"#, "signals.audience: is required"),
            (#"{"issuer": "https://idp.test", "audience": "gw", "path": "signals"}"#, "signals.path:"),
            (
                #"{"issuer": "https://idp.test", "audience": "gw", "trustedPeers": ["nope"]}"#,
                "signals.trustedPeers[0]:"
            ),
        ]
        for (section, issue) in cases {
            let found = self.issues(extra: ", \"signals\": \(section)")
            #expect(found.contains { $0.hasPrefix(issue) }, "\(section): \(found)")
        }
    }

    @Test func websocketProtocolSource() throws {
        let configuration = try self.load(
            sources: #"[{"header": "Authorization"}, {"websocketProtocol": "base64url.bearer.authorization.k8s.io."}]"#
        ).get()
        #expect(
            configuration.tokens.sources.last == .websocketProtocol(prefix: "base64url.bearer.authorization.k8s.io."))
        #expect(
            self.issues(sources: #"[{"websocketProtocol": "bad prefix"}]"#).contains {
                $0.hasPrefix("tokens.sources[0].websocketProtocol:")
            })
        #expect(!self.issues(sources: #"[{"websocketProtocol": "p.", "cookie": "c"}]"#).isEmpty)
    }
}
