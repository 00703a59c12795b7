/// `auth-gateway assertion-key new` (docs/assertions.md): a fresh key as an entry of
/// `identityAssertion.keysFile`, with status `next`, so that it is published before anything is
/// signed with it.
extension SigningKey {
    /// The entry: `{"kid", "status": "next", "jwk"}` for EC and Ed25519 keys, `privateKeyPEM`
    /// for RSA.
    public static func newEntry(kid: String, algorithm: Algorithm) throws -> JSONValue {
        let key = try SigningKey.generate(algorithm)
        var entry: JSONObject = ["kid": .string(kid), "status": "next"]
        if let jwk = key.privateJWK(kid: kid) {
            entry["jwk"] = .object(jwk)
        } else if let pem = key.privateKeyPEM {
            entry["privateKeyPEM"] = .string(pem)
        }
        return .object(entry)
    }

    /// What `assertion-key new` prints: the entry and how to roll it in.
    public static func newEntryText(kid: String, algorithm: Algorithm) throws -> String {
        """
        A new \(algorithm.rawValue) key "\(kid)" for identityAssertion.keysFile (a private key: keep the file secret).
        Add it with status "next", reload (SIGHUP), wait at least the verifiers' JWKS cache time (300 s),
        then make it "current" and the old current key "retired", and reload again (docs/assertions.md):

        \(try Self.newEntry(kid: kid, algorithm: algorithm).jsonText)

        """
    }
}
