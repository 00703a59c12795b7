import Testing

@testable import AuthGateway

/// `DependencyKey`: which upstream and which of its URLs a health record is about.
@Suite("DependencyKey")
struct DependencyKeyTests {
    @Test func eachUpstreamHasItsPoolName() {
        #expect(DependencyKey.Upstream.backend("api").poolName == "backend api")
        #expect(DependencyKey.Upstream.authService.poolName == "auth service")
        #expect(DependencyKey.Upstream.jwks.poolName == "jwks")
        #expect(DependencyKey.Upstream.discovery.poolName == "discovery")
        #expect(DependencyKey.Upstream.discovered.poolName == "discovered")
        #expect(DependencyKey.Upstream.introspection.poolName == "introspection")
    }

    @Test func keysDifferByUpstreamAndByURL() {
        let first = UpstreamURL(scheme: .http, host: "10.0.0.1", port: 80, pathAndQuery: "")
        let second = UpstreamURL(scheme: .http, host: "10.0.0.2", port: 80, pathAndQuery: "")
        let key = DependencyKey(upstream: .backend("api"), url: first)
        #expect(key == DependencyKey(upstream: .backend("api"), url: first))
        #expect(key != DependencyKey(upstream: .backend("api"), url: second))
        #expect(key != DependencyKey(upstream: .backend("other"), url: first))
        #expect(key != DependencyKey(upstream: .authService, url: first))
        #expect(Set([key, DependencyKey(upstream: .backend("api"), url: first)]).count == 1)
    }
}
