import Testing

@testable import AuthGateway

@Suite("CookieHeader")
struct CookieHeaderTests {
    private func pairs(_ header: String) -> [String] {
        CookieHeader.pairs(in: header).map { "\($0.name)=\($0.value)" }
    }

    @Test("pairs are split, trimmed and unquoted")
    func parsePairs() {
        #expect(pairs("a=1; b=2") == ["a=1", "b=2"])
        #expect(pairs(" a = 1 ;b=2;  c=\"3\" ") == ["a=1", "b=2", "c=3"])
        #expect(pairs("a=x=y") == ["a=x=y"])
        #expect(pairs("flag; a=1;;") == ["a=1"])
        #expect(pairs("a=") == ["a="])
        #expect(pairs("a=\"\"") == ["a="])
        #expect(pairs("a=\"") == ["a=\""])
        #expect(pairs("") == [])
    }

    @Test("removing a cookie keeps the others, in order")
    func remove() {
        #expect(CookieHeader.rewrite("a=1; access_token=x; b=2", name: "access_token", replacement: nil) == "a=1; b=2")
        #expect(CookieHeader.rewrite("access_token=x;b=2", name: "access_token", replacement: nil) == "b=2")
        #expect(CookieHeader.rewrite("a=1; access_token=x", name: "access_token", replacement: nil) == "a=1")
    }

    @Test("removing the only cookie leaves nothing")
    func removeOnly() {
        #expect(CookieHeader.rewrite("access_token=x", name: "access_token", replacement: nil) == nil)
        #expect(CookieHeader.rewrite(" access_token=x ; access_token=y", name: "access_token", replacement: nil) == nil)
    }

    @Test("replacing a cookie keeps the others, in place")
    func replace() {
        #expect(
            CookieHeader.rewrite("a=1; access_token=old; b=2", name: "access_token", replacement: "new")
                == "a=1; access_token=new; b=2")
        #expect(
            CookieHeader.rewrite("access_token=\"old\"", name: "access_token", replacement: "new") == "access_token=new"
        )
    }

    @Test("only the named cookie is touched")
    func exactName() {
        let header = "access_token2=a; my_access_token=b; Access_Token=c; access_token=d"
        #expect(
            CookieHeader.rewrite(header, name: "access_token", replacement: nil)
                == "access_token2=a; my_access_token=b; Access_Token=c")
        #expect(CookieHeader.rewrite("a=1", name: "access_token", replacement: nil) == "a=1")
    }

    @Test("a value holding the cookie's name is not mistaken for it")
    func nameInValue() {
        #expect(
            CookieHeader.rewrite("x=access_token=1; access_token=2", name: "access_token", replacement: "3")
                == "x=access_token=1; access_token=3")
    }

    @Test("removing the session cookie and the flow cookies keeps the others; a bare name is a cookie name there")
    func removingSessionAndFlows() {
        let header = "theme=dark; gateway-session=h; gateway-flow-1=a;;gateway-flow-2=b; gateway-session; z=\"q\""
        #expect(
            CookieHeader.removing(header, name: "gateway-session", prefix: "gateway-flow-") == "theme=dark; z=\"q\"")
        #expect(CookieHeader.removing("gateway-session=h", name: "gateway-session", prefix: "gateway-flow-") == nil)
        let untouched = "a=1;b=2"
        #expect(CookieHeader.removing(untouched, name: "gateway-session", prefix: "gateway-flow-") == untouched)
        // `rewrite` only matches a name with a value: a bare flag of that name stays.
        #expect(
            CookieHeader.rewrite("access_token; a=1", name: "access_token", replacement: nil) == "access_token; a=1")
    }

    @Test("non-ASCII bytes in values and names keep their place; names compare byte for byte")
    func nonASCII() {
        #expect(pairs("é=ü; a=\"ç\" ;b=日本") == ["é=ü", "a=ç", "b=日本"])
        let kept = CookieHeader.removing("x=é; gateway-session=h; y=日", name: "gateway-session", prefix: "f-")
        #expect(kept == "x=é; y=日")
        #expect(CookieHeader.rewrite("é=1; access_token=2", name: "access_token", replacement: nil) == "é=1")
        // Canonically equivalent but different bytes: not the same cookie name.
        #expect(CookieHeader.rewrite("e\u{301}=1", name: "\u{e9}", replacement: nil) == "e\u{301}=1")
    }

    @Test("a value or a longer name holding the session cookie's name leaves the header as it came")
    func removingLeavesLookalikes() {
        let header = "x=gateway-session; gateway-session2=a;gateway-flo=b"
        #expect(CookieHeader.removing(header, name: "gateway-session", prefix: "gateway-flow-") == header)
        #expect(CookieHeader.removing("  ; ;", name: "gateway-session", prefix: "gateway-flow-") == "  ; ;")
    }
}
