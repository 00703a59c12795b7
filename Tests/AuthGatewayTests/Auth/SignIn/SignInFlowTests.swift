import Crypto
import Foundation
import Testing

@testable import AuthGateway

@Suite("SignInFlow")
struct SignInFlowTests {
    let sealer = SignInFlowSealer(key: SymmetricKey(size: .bits256))

    @Test("a flow opens under its own cookie name only, and not after it expires")
    func sealing() throws {
        let flow = SignInFlow.start(returnPath: "/app?x=1", now: 1000)
        #expect(SignInFlow.isFlowID(flow.id[...]))
        #expect(flow.verifier.utf8.count == 43)
        let name = "__Host-gateway-flow-\(flow.id)"
        let value = self.sealer.seal(flow, cookieName: name)
        #expect(!value.contains(flow.verifier) && !value.contains(flow.nonce))
        let opened = try #require(self.sealer.open(value[...], cookieName: name, id: flow.id, now: 1500))
        #expect(opened.verifier == flow.verifier && opened.nonce == flow.nonce && opened.returnPath == "/app?x=1")
        #expect(self.sealer.open(value[...], cookieName: name + "x", id: flow.id, now: 1500) == nil)
        #expect(self.sealer.open(value[...], cookieName: name, id: flow.id, now: 1000 + 601) == nil)
        let other = SignInFlowSealer(key: SymmetricKey(size: .bits256))
        #expect(other.open(value[...], cookieName: name, id: flow.id, now: 1500) == nil)
        var tampered = Array(value.utf8)
        tampered[tampered.count / 2] =
            tampered[tampered.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(
            self.sealer.open(String(decoding: tampered, as: UTF8.self)[...], cookieName: name, id: flow.id, now: 1500)
                == nil)
        #expect(self.sealer.open("garbage", cookieName: name, id: flow.id, now: 1500) == nil)
    }

    @Test("the PKCE challenge is S256 of the verifier (RFC 7636 appendix B)")
    func challenge() {
        let flow = SignInFlow(
            id: "x", verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", nonce: "n", returnPath: "/", expiresAt: 0)
        #expect(flow.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
    }

    @Test("the flow key is derived from the shared-state key (same on every instance), else random")
    func keys() {
        let shared = Array(repeating: UInt8(7), count: 32)
        let a = SignInFlowSealer(key: SignInFlowSealer.key(sharedStateKey: shared))
        let b = SignInFlowSealer(key: SignInFlowSealer.key(sharedStateKey: shared))
        let flow = SignInFlow.start(returnPath: "/", now: 0)
        #expect(b.open(a.seal(flow, cookieName: "c")[...], cookieName: "c", id: flow.id, now: 1) != nil)
        let random = SignInFlowSealer(key: SignInFlowSealer.key(sharedStateKey: nil))
        #expect(random.open(a.seal(flow, cookieName: "c")[...], cookieName: "c", id: flow.id, now: 1) == nil)
    }

    @Test("form decoding: +, escapes, and duplicated names are ambiguous")
    func formDecoding() {
        #expect(FormDecoding.value("rd", in: "rd=%2Fapp%3Fx%3D1&y=2") == "/app?x=1")
        #expect(FormDecoding.value("a", in: "a=b+c%21") == "b c!")
        #expect(FormDecoding.value("a", in: "a=1&a=2") == nil)
        #expect(FormDecoding.value("a", in: "b=1") == nil)
        #expect(FormDecoding.value("a", in: "a=%zz") == "%zz")
    }
}
