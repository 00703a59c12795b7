import Crypto
import Foundation
import Testing
import _CryptoExtras

@testable import AuthGateway

@Suite("PublicKey")
struct PublicKeyTests {
    /// A byte form of the key, for comparing two parses.
    private func bytes(_ key: PublicKey) -> [UInt8] {
        switch key {
        case .rsa(let key): return Array(key.derRepresentation)
        case .p256(let key): return Array(key.derRepresentation)
        case .p384(let key): return Array(key.derRepresentation)
        case .p521(let key): return Array(key.derRepresentation)
        case .ed25519(let key): return Array(key.rawRepresentation)
        }
    }

    private func message(_ body: () throws(PublicKeyError) -> PublicKey) -> String? {
        do throws(PublicKeyError) {
            _ = try body()
            return nil
        } catch {
            return error.message
        }
    }

    @Test(
        "SubjectPublicKeyInfo PEM of each key type",
        arguments: [
            ("rsa", PublicKeyKind.rsa), ("rsa-pss", .rsa), ("other-rsa", .rsa), ("enc-rsa", .rsa),
            ("ec256", .p256), ("ec384", .p384), ("ec521", .p521), ("ed25519", .ed25519),
        ]
    )
    func spkiPEM(stem: String, kind: PublicKeyKind) throws {
        let key = try PublicKey(pem: Fixtures.text("jwt/keys/\(stem).pub.pem"))
        #expect(key.kind == kind)
        if case .rsa(let rsa) = key { #expect(rsa.keySizeInBits == 2048) }
    }

    @Test("the kinds imply the right algorithm")
    func impliedAlgorithms() {
        #expect(JWSAlgorithm.implied(by: .rsa) == nil)
        #expect(JWSAlgorithm.implied(by: .p256) == .ES256)
        #expect(JWSAlgorithm.implied(by: .p384) == .ES384)
        #expect(JWSAlgorithm.implied(by: .p521) == .ES512)
        #expect(JWSAlgorithm.implied(by: .ed25519) == .EdDSA)
        // Outside RSA, a key kind fits exactly one algorithm, and it is the implied one.
        for algorithm in JWSAlgorithm.allCases where algorithm.keyKind != .rsa {
            #expect(JWSAlgorithm.implied(by: algorithm.keyKind) == algorithm)
        }
    }

    @Test("a certificate PEM yields its subject's public key")
    func certificatePEM() throws {
        let fromCertificate = try PublicKey(pem: Fixtures.text("jwt/keys/rsa.cert.pem"))
        let fromSPKI = try PublicKey(pem: Fixtures.text("jwt/keys/rsa.pub.pem"))
        #expect(fromCertificate.kind == .rsa)
        #expect(bytes(fromCertificate) == bytes(fromSPKI))
        // And it verifies the vector signed by that key.
        let token = try #require(tokenVectors.first { $0.name == "valid-rs256" }?.token)
        let snapshot = KeySnapshot(
            generation: 1,
            issuers: [
                VectorKeys.issuerEntry(
                    VectorKeys.issuer,
                    keys: [try VerificationKey(kid: "rsa-1", algorithm: .RS256, key: fromCertificate)], audiences: nil,
                    requiredClaims: [])
            ])
        #expect(VectorKeys.verdict(token, keys: snapshot) == "valid")
    }

    @Test("base64 DER (the CosyncAuth raw public key) yields the same key as the PEM")
    func base64DER() throws {
        let text = Fixtures.text("jwt/keys/rsa.pub.b64")
        let fromBase64 = try PublicKey(base64SubjectPublicKeyInfo: text)
        let fromPEM = try PublicKey(pem: Fixtures.text("jwt/keys/rsa.pub.pem"))
        #expect(bytes(fromBase64) == bytes(fromPEM))
        // Line breaks and spaces inside the base64 are tolerated.
        var wrapped = ""
        for (index, character) in text.enumerated() {
            if index > 0 && index % 64 == 0 { wrapped += "\n  " }
            wrapped.append(character)
        }
        #expect(bytes(try PublicKey(base64SubjectPublicKeyInfo: " \(wrapped)\n")) == bytes(fromPEM))
    }

    @Test("a PKCS #1 RSA PUBLIC KEY PEM is accepted")
    func pkcs1PEM() throws {
        let rsa = try _RSA.Signing.PublicKey(pemRepresentation: Fixtures.text("jwt/keys/rsa.pub.pem"))
        let pkcs1 = rsa.pkcs1PEMRepresentation
        #expect(pkcs1.contains("BEGIN RSA PUBLIC KEY"))
        #expect(bytes(try PublicKey(pem: pkcs1)) == Array(rsa.derRepresentation))
    }

    @Test("RSA keys below 2048 bits are refused in every form")
    func weakRSA() throws {
        let pem = Fixtures.text("jwt/keys/rsa-1024.pub.pem")
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(pem: pem) }
                == "RSA key of 1024 bits is too short (minimum 2048)")
        let weak = try _RSA.Signing.PublicKey(unsafePEMRepresentation: pem)
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(pem: weak.pkcs1PEMRepresentation) }?.contains(
                "too short") == true)
        let base64 = Data(weak.derRepresentation).base64EncodedString()
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(base64SubjectPublicKeyInfo: base64) }?.contains(
                "too short") == true)
    }

    @Test(
        "private keys are refused with a message that says so",
        arguments: ["rsa", "rsa-pss", "ec256", "ec384", "ec521", "ed25519"])
    func privateKeyRefused(stem: String) {
        let pem = Fixtures.text("jwt/keys/private/\(stem).key.pem")
        let text = message { () throws(PublicKeyError) in try PublicKey(pem: pem) }
        #expect(text == "PEM holds a private key; configure the public key only")
        // The message never echoes key material.
        let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        #expect(text?.contains(body) == false)
    }

    @Test("PKCS #1 and SEC 1 private key labels are refused too")
    func legacyPrivateKeyLabels() {
        let body = Fixtures.text("jwt/keys/private/ec256.key.pem")
            .replacingOccurrences(of: "BEGIN PRIVATE KEY", with: "BEGIN EC PRIVATE KEY")
            .replacingOccurrences(of: "END PRIVATE KEY", with: "END EC PRIVATE KEY")
        #expect(message { () throws(PublicKeyError) in try PublicKey(pem: body) }?.contains("private key") == true)
    }

    @Test("garbage is refused")
    func garbage() {
        #expect(message { () throws(PublicKeyError) in try PublicKey(pem: "hello") } == "not a PEM document")
        #expect(message { () throws(PublicKeyError) in try PublicKey(pem: "") } == "not a PEM document")
        #expect(
            message { () throws(PublicKeyError) in
                try PublicKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
            } == "not a DER SubjectPublicKeyInfo")
        #expect(
            message { () throws(PublicKeyError) in
                try PublicKey(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
            } == "not a DER X.509 certificate")
        #expect(
            message { () throws(PublicKeyError) in
                try PublicKey(pem: "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
            } == "unsupported PEM type \"CERTIFICATE REQUEST\"")
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(base64SubjectPublicKeyInfo: "not base64!") }
                == "not valid base64")
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(base64SubjectPublicKeyInfo: "AAAA") }
                == "not a DER SubjectPublicKeyInfo")
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(subjectPublicKeyInfo: []) }
                == "not a DER SubjectPublicKeyInfo")
    }

    @Test("unsupported curves and key algorithms are named")
    func unsupportedKeys() {
        let secp256k1 = """
            -----BEGIN PUBLIC KEY-----
            MFYwEAYHKoZIzj0CAQYFK4EEAAoDQgAEsdS6nXw4ZZDX01DMkB1fZEElaZQEuG1I
            w1CTZ7I+Ksn7Se/VmIxplg6ESxjWTROZOkx+t8IBKJg+dvszdTIvIQ==
            -----END PUBLIC KEY-----
            """
        #expect(message { () throws(PublicKeyError) in try PublicKey(pem: secp256k1) } == "unsupported elliptic curve")
        let x25519 = """
            -----BEGIN PUBLIC KEY-----
            MCowBQYDK2VuAyEA5HnLBqKszYbQbH/k3UAwG2sn4QgdYUdY7AKf4zv1Agc=
            -----END PUBLIC KEY-----
            """
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(pem: x25519) }?.hasPrefix("unsupported key algorithm")
                == true)
        let ed448 = """
            -----BEGIN PUBLIC KEY-----
            MEMwBQYDK2VxAzoAb2QNUpKG7ZRUmiZBm3QaqKrel4Tz+FbxtgsAYMAH6ydwlOrg
            9lr2if6J2HagD02r3PN4KeDnmmIA
            -----END PUBLIC KEY-----
            """
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(pem: ed448) }?.hasPrefix("unsupported key algorithm")
                == true)
    }

    @Test("a P-256 point that is not on the curve is refused")
    func invalidPoint() throws {
        var der = Array(
            try #require(
                Data(
                    base64Encoded: Fixtures.text("jwt/keys/ec256.pub.pem")
                        .split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined())))
        der[der.count - 1] ^= 0x01
        #expect(
            message { () throws(PublicKeyError) in try PublicKey(subjectPublicKeyInfo: der) } == "invalid public key")
    }

    @Test("VerificationKey pins a key to an algorithm of its kind")
    func verificationKeyPinning() throws {
        let rsa = VectorKeys.publicKey("rsa")
        let ec = VectorKeys.publicKey("ec256")
        for algorithm in JWSAlgorithm.allCases {
            let rsaFits = (try? VerificationKey(kid: nil, algorithm: algorithm, key: rsa)) != nil
            let ecFits = (try? VerificationKey(kid: nil, algorithm: algorithm, key: ec)) != nil
            #expect(rsaFits == [.RS256, .RS384, .RS512, .PS256, .PS384, .PS512].contains(algorithm), "\(algorithm)")
            #expect(ecFits == (algorithm == .ES256), "\(algorithm)")
        }
        #expect(throws: PublicKeyError("a EC P-256 key cannot verify RS256")) {
            try VerificationKey(kid: "k", algorithm: .RS256, key: ec)
        }
    }
}
