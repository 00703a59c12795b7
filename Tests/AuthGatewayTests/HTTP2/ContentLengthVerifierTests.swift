import Testing

@testable import AuthGateway

@Suite("ContentLengthVerifier")
struct ContentLengthVerifierTests {
    @Test func dataThatAddsUpExactlyPasses() {
        var verifier = ContentLengthVerifier(contentLength: 10)
        #expect(verifier.receivedData(length: 4) == true)
        #expect(!verifier.endOfStream(), "6 bytes are still to come")
        #expect(verifier.receivedData(length: 6) == true)
        #expect(verifier.endOfStream())
        #expect(verifier.receivedData(length: 0) == true, "an empty DATA frame adds nothing")
        #expect(verifier.endOfStream())
    }

    @Test func oneByteTooManyIsRefusedAtOnce() {
        var verifier = ContentLengthVerifier(contentLength: 3)
        #expect(verifier.receivedData(length: 2) == true)
        #expect(verifier.receivedData(length: 2) == false)
        #expect(!verifier.endOfStream())
    }

    @Test func aRequestEndingShortIsRefusedAtItsEnd() {
        var verifier = ContentLengthVerifier(contentLength: 5)
        #expect(verifier.receivedData(length: 4) == true)
        #expect(!verifier.endOfStream())
    }

    @Test func withoutContentLengthNothingIsChecked() {
        var verifier = ContentLengthVerifier(contentLength: nil)
        #expect(verifier.receivedData(length: 1 << 20) == true)
        #expect(verifier.endOfStream())
        #expect(verifier.remaining == nil)
    }

    @Test func aZeroLengthMustStayEmpty() {
        var empty = ContentLengthVerifier(contentLength: 0)
        #expect(empty.endOfStream())
        #expect(empty.receivedData(length: 1) == false)
    }
}
