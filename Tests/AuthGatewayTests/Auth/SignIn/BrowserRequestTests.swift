import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("BrowserRequest")
struct BrowserRequestTests {
    @Test("a navigation is GET/HEAD, wants HTML, has no Authorization, and is a navigation if it says so")
    func navigations() {
        let html = "text/html,application/xhtml+xml,*/*;q=0.8"
        #expect(BrowserRequest.isNavigation(method: .GET, headers: ["Accept": html]))
        #expect(BrowserRequest.isNavigation(method: .HEAD, headers: ["Accept": html, "Sec-Fetch-Mode": "navigate"]))
        #expect(!BrowserRequest.isNavigation(method: .POST, headers: ["Accept": html]))
        #expect(!BrowserRequest.isNavigation(method: .GET, headers: ["Accept": "application/json"]))
        #expect(!BrowserRequest.isNavigation(method: .GET, headers: [:]))
        #expect(!BrowserRequest.isNavigation(method: .GET, headers: ["Accept": "*/*"]))
        #expect(!BrowserRequest.isNavigation(method: .GET, headers: ["Accept": html, "Sec-Fetch-Mode": "cors"]))
        #expect(!BrowserRequest.isNavigation(method: .GET, headers: ["Accept": html, "Authorization": "Basic x"]))
        #expect(!BrowserRequest.isNavigation(method: .GET, headers: ["Accept": "text/html;q=0"]))
        #expect(BrowserRequest.isNavigation(method: .GET, headers: ["Accept": "TEXT/HTML; q=0.5"]))
    }

    @Test("HTML pages only for clients that prefer HTML to JSON")
    func prefersHTML() {
        #expect(BrowserRequest.prefersHTML(["Accept": "text/html,*/*;q=0.8"]))
        #expect(!BrowserRequest.prefersHTML(["Accept": "application/json"]))
        #expect(!BrowserRequest.prefersHTML(["Accept": "application/json, text/html;q=0.5"]))
        #expect(!BrowserRequest.prefersHTML([:]))
    }

    @Test("CSRF: unsafe methods need Sec-Fetch-Site same-origin/none or the public origin")
    func sameOrigin() {
        let base = "https://app.example.com"
        func check(_ method: HTTPMethod, _ headers: HTTPHeaders) -> Bool {
            BrowserRequest.isSameOrigin(method: method, headers: headers, publicBaseURL: base)
        }
        #expect(check(.GET, ["Sec-Fetch-Site": "cross-site"]))
        #expect(check(.OPTIONS, [:]))
        #expect(check(.POST, ["Sec-Fetch-Site": "same-origin"]))
        #expect(check(.DELETE, ["Sec-Fetch-Site": "none"]))
        #expect(check(.POST, ["Origin": base]))
        #expect(!check(.POST, ["Sec-Fetch-Site": "cross-site"]))
        #expect(!check(.POST, ["Sec-Fetch-Site": "same-site"]))
        #expect(!check(.PUT, ["Origin": "https://evil.example"]))
        #expect(!check(.POST, ["Origin": base + ".evil.example"]))
        #expect(!check(.PATCH, [:]))
    }
}
