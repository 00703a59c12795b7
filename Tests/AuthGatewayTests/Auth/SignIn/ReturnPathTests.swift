import Testing

@testable import AuthGateway

@Suite("ReturnPath")
struct ReturnPathTests {
    @Test("relative paths on this origin are kept, with their query")
    func kept() {
        for path in ["/", "/app", "/app/page?x=1&y=%20", "/a/b/../c", "/%E2%9C%93", "/path;params"] {
            #expect(ReturnPath.sanitize(path[...]) == path)
        }
    }

    @Test("hostile return paths, also percent-encoded, become /")
    func hostile() {
        let hostile = [
            "//evil.example", "https://evil.example", "http:/evil", "/\\evil.example", "\\\\evil", "evil", "",
            "/%2F/evil.example", "/%2f%2fevil", "%2F%2Fevil", "/%5Cevil", "/%5cevil", "/a%5Cb", "/\t/evil", "/a\nb",
            "/%0aSet-Cookie:x", "/%00", "/%", "/%zz", "javascript:alert(1)", "/\u{7F}",
            "/" + String(repeating: "a", count: 3000),
        ]
        for path in hostile {
            #expect(ReturnPath.sanitize(path[...]) == "/", "\(path.debugDescription) must become /")
        }
        #expect(ReturnPath.sanitize(nil) == "/")
    }
}
