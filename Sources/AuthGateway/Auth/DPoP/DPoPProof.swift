import Crypto

/// Why a DPoP proof was refused: the check that failed, named in the problem document's
/// detail (docs/authentication.md).
struct DPoPFailure: Error, Equatable, Sendable {
    let check: String
    init(_ check: String) { self.check = check }
}

/// A proof that passed every check but the replay check, which needs the shared cache.
struct DPoPVerifiedProof: Equatable, Sendable {
    /// The RFC 7638 thumbprint of the proof's key.
    let thumbprint: String
    let jti: String
    let issuedAt: Double
    /// The proof's `nonce` claim, checked by the caller when `tokens.dpop.nonce` is on.
    var nonce: String? = nil
}

/// Checks one DPoP proof (RFC 9449 §4.3) against the request it came with: pure, no clock, no
/// I/O. One signature verification per proof: nothing about a proof is cached, so a replayed
/// proof can only be caught by its `jti` (`ReplayCache`).
enum DPoPProof {
    /// Members whose presence in the header's `jwk` means a private key was sent.
    private static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    struct Request {
        /// The method as sent (compared case-sensitively, RFC 9449 §4.3 step 8).
        let method: String
        /// The normalized URL the proof's `htu` must equal (`DPoPTarget.expected`).
        let url: String
        /// The access token the proof is for (`ath`).
        let accessToken: Substring
        let now: Double
        /// How `htu`'s path is made canonical: as every request path is.
        var paths = PathSettings()
    }

    static func verify(
        _ proof: Substring, for request: Request, configuration: DPoPConfiguration
    ) -> Result<DPoPVerifiedProof, DPoPFailure> {
        var proof = proof
        return proof.withUTF8 { bytes in
            Self.verify(UnsafeRawBufferPointer(bytes), request: request, configuration: configuration)
        }
    }

    private static func verify(
        _ token: UnsafeRawBufferPointer, request: Request, configuration: DPoPConfiguration
    ) -> Result<DPoPVerifiedProof, DPoPFailure> {
        let jws: CompactJWS
        do {
            jws = try CompactJWS.parse(token)
        } catch .unsupportedAlgorithm {
            return .failure(DPoPFailure("alg"))
        } catch {
            return .failure(DPoPFailure("not a JWS"))
        }
        guard case .string("dpop+jwt")? = jws.header["typ"] else { return .failure(DPoPFailure("typ")) }
        guard let algorithm = JWSAlgorithm(rawValue: jws.algorithm), configuration.algorithms.contains(algorithm) else {
            return .failure(DPoPFailure("alg"))
        }
        guard case .object(let jwk)? = jws.header["jwk"] else { return .failure(DPoPFailure("jwk")) }
        guard !Self.privateMembers.contains(where: { jwk[$0] != nil }) else {
            return .failure(DPoPFailure("jwk has private members"))
        }
        // The client picks the key: an RSA modulus past 8192 bits would make every request cost
        // a huge verification (1366 base64url characters = 1024 bytes).
        if case .string(let modulus)? = jwk["n"], modulus.utf8.count > 1366 { return .failure(DPoPFailure("jwk")) }
        let key: VerificationKey
        do {
            // `use`/`alg`/`key_ops` of the JWK do not matter here: the proof's `alg` pins it.
            var publicOnly = jwk
            publicOnly["use"] = nil
            publicOnly["key_ops"] = nil
            publicOnly["alg"] = nil
            guard let parsed = try JWKSet.verificationKey(from: publicOnly, kid: nil) else {
                return .failure(DPoPFailure("jwk"))
            }
            key = try VerificationKey(kid: nil, algorithm: algorithm, key: parsed.key)
        } catch {
            return .failure(DPoPFailure("jwk"))
        }
        guard let thumbprint = JWKThumbprint.sha256(of: jwk) else { return .failure(DPoPFailure("jwk")) }
        guard
            key.isValidSignature(jws.signature, for: UnsafeRawBufferPointer(rebasing: token[..<jws.signingInputLength]))
        else {
            return .failure(DPoPFailure("signature"))
        }
        let claims = jws.payload
        guard case .string(let htm)? = claims["htm"], htm == request.method else { return .failure(DPoPFailure("htm")) }
        guard case .string(let htu)? = claims["htu"], DPoPTarget.normalized(htu: htu, paths: request.paths) == request.url else {
            return .failure(DPoPFailure("htu"))
        }
        guard let iat = claims["iat"]?.numberValue?.double else { return .failure(DPoPFailure("iat")) }
        let leeway = Double(configuration.leewaySeconds)
        guard iat <= request.now + leeway, iat >= request.now - Double(configuration.maxAgeSeconds) - leeway else {
            return .failure(DPoPFailure("iat"))
        }
        guard case .string(let jti)? = claims["jti"], !jti.isEmpty, jti.utf8.count <= 256 else {
            return .failure(DPoPFailure("jti"))
        }
        var accessToken = request.accessToken
        let expectedHash = accessToken.withUTF8 { Base64URL.encode(SHA256.hash(data: UnsafeRawBufferPointer($0))) }
        guard case .string(let ath)? = claims["ath"], ath == expectedHash else { return .failure(DPoPFailure("ath")) }
        return .success(
            DPoPVerifiedProof(thumbprint: thumbprint, jti: jti, issuedAt: iat, nonce: claims["nonce"]?.stringValue))
    }
}
