import Foundation
import Testing

@testable import AuthGateway

@Suite("OutcomeSealer")
struct OutcomeSealerTests {
    static let key = SharedStateConfiguration.EncryptionKey(bytes: Array(repeating: 7, count: 32))!
    static let otherKey = SharedStateConfiguration.EncryptionKey(bytes: Array(repeating: 8, count: 32))!
    static let digest = TokenDigest(of: "rt-the-old-refresh-token"[...])
    static let otherDigest = TokenDigest(of: "rt-another-refresh-token"[...])

    @Test(arguments: [
        RefreshOutcome.refreshed(accessToken: "eyJ.access.token", refreshToken: "rt-new"),
        .refreshed(accessToken: "eyJ.access.token", refreshToken: nil),
        .rejected,
        .unavailable,
    ])
    func sealedOutcomesOpenAsTheyWere(_ outcome: RefreshOutcome) throws {
        let sealer = OutcomeSealer(key: Self.key)
        let sealed = sealer.seal(outcome, for: Self.digest)
        #expect(try sealer.open(sealed, for: Self.digest) == outcome)
    }

    @Test func nothingOfTheTokensIsReadableInTheSealedBytes() {
        let accessToken = "eyJhbGciOiJSUzI1NiJ9.access-token-in-clear"
        let refreshToken = "rt-rotated-refresh-token-in-clear"
        let sealed = OutcomeSealer(key: Self.key).seal(
            .refreshed(accessToken: accessToken, refreshToken: refreshToken), for: Self.digest)
        let text = String(decoding: sealed, as: UTF8.self)
        #expect(!text.contains("access-token-in-clear"))
        #expect(!text.contains("refresh-token-in-clear"))
        #expect(!text.contains("refreshed"))
        #expect(sealed.first == OutcomeSealer.format)
        // A fresh nonce each time: the same outcome never seals to the same bytes.
        #expect(
            OutcomeSealer(key: Self.key).seal(.rejected, for: Self.digest)
                != OutcomeSealer(key: Self.key).seal(.rejected, for: Self.digest))
    }

    @Test func anOutcomeMovedToAnotherRowDoesNotOpen() {
        let sealed = OutcomeSealer(key: Self.key).seal(
            .refreshed(accessToken: "a", refreshToken: "r"), for: Self.digest)
        #expect(throws: OutcomeSealer.OpenError(reason: .notAuthentic)) {
            try OutcomeSealer(key: Self.key).open(sealed, for: Self.otherDigest)
        }
    }

    @Test func anotherKeyDoesNotOpen() {
        let sealed = OutcomeSealer(key: Self.key).seal(.rejected, for: Self.digest)
        #expect(throws: OutcomeSealer.OpenError(reason: .notAuthentic)) {
            try OutcomeSealer(key: Self.otherKey).open(sealed, for: Self.digest)
        }
    }

    @Test func anyAlteredByteIsRefused() {
        let sealer = OutcomeSealer(key: Self.key)
        let sealed = sealer.seal(.refreshed(accessToken: "a", refreshToken: "r"), for: Self.digest)
        for index in 1..<sealed.count {
            var altered = sealed
            altered[index] ^= 0x01
            #expect(throws: OutcomeSealer.OpenError(reason: .notAuthentic)) {
                try sealer.open(altered, for: Self.digest)
            }
        }
        var unknownFormat = sealed
        unknownFormat[0] = 2
        #expect(throws: OutcomeSealer.OpenError(reason: .unknownFormat)) {
            try sealer.open(unknownFormat, for: Self.digest)
        }
        #expect(throws: OutcomeSealer.OpenError.self) { try sealer.open([], for: Self.digest) }
        #expect(throws: OutcomeSealer.OpenError(reason: .notAuthentic)) {
            try sealer.open([1, 2, 3], for: Self.digest)
        }
    }

    @Test func digestsRoundTripThroughBytesAndHex() throws {
        let digest = Self.digest
        #expect(digest.bytes.count == 32)
        #expect(TokenDigest(bytes: digest.bytes) == digest)
        #expect(digest.hex.count == 64)
        #expect(TokenDigest(hex: digest.hex) == digest)
        // The bytes are SHA-256 of the token, as `sha256sum` prints them.
        #expect(TokenDigest(of: "abc"[...]).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(TokenDigest(hex: "zz" + String(digest.hex.dropFirst(2))) == nil)
        #expect(TokenDigest(hex: digest.hex.uppercased()) == digest)  // an API key's sha256 may be either case
        #expect(TokenDigest(bytes: [1, 2, 3]) == nil)
        #expect(TokenDigest(hex: String(digest.hex.dropLast())) == nil)
        #expect(TokenDigest(hex: digest.hex + "0") == nil)
        #expect(TokenDigest(hex: "") == nil)
    }

    // MARK: Introspection answers (docs/authentication.md), sealed the same way

    @Test func introspectionAnswersOpenAsTheyWereWithTheReadersValidity() throws {
        let sealer = OutcomeSealer(key: Self.key)
        let claims: JSONObject = ["active": true, "sub": "alice", "scope": "read write", "exp": 1_900_000_000]
        let active = try #require(sealer.seal(.active(claims: claims, validUntil: 100), for: Self.digest))
        #expect(
            try sealer.openIntrospection(active, for: Self.digest, validUntil: 250)
                == .active(claims: claims, validUntil: 250))
        let inactive = try #require(sealer.seal(.inactive(validUntil: 100), for: Self.digest))
        #expect(try sealer.openIntrospection(inactive, for: Self.digest, validUntil: 7) == .inactive(validUntil: 7))
        #expect(sealer.seal(IntrospectionOutcome.unavailable, for: Self.digest) == nil, "failures are never stored")
        #expect(!String(decoding: active, as: UTF8.self).contains("alice"))
        #expect(throws: OutcomeSealer.OpenError(reason: .notAuthentic)) {
            try sealer.openIntrospection(active, for: Self.otherDigest, validUntil: 1)
        }
        #expect(throws: OutcomeSealer.OpenError(reason: .notAuthentic)) {
            try OutcomeSealer(key: Self.otherKey).openIntrospection(active, for: Self.digest, validUntil: 1)
        }
        // A refresh outcome is not an introspection answer, nor the other way round.
        #expect(throws: OutcomeSealer.OpenError(reason: .unreadable)) {
            try sealer.openIntrospection(sealer.seal(.rejected, for: Self.digest), for: Self.digest, validUntil: 1)
        }
        #expect(throws: OutcomeSealer.OpenError(reason: .unreadable)) { try sealer.open(active, for: Self.digest) }
    }
}
