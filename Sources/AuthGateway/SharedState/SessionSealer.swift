import Crypto

/// How a session is kept in the sessions table (docs/shared-state.md): the record sealed with
/// AES-256-GCM under the shared-state key exactly as refresh outcomes are (`OutcomeSealer`,
/// the handle's digest as authenticated data, so a record copied to another row does not
/// open), and `sid` and `sub` only as keyed hashes, for back-channel logout to select by.
/// Nothing of a session is stored in clear.
///
/// The sealed document: `{"s": sub, "i": sid (absent without one), "t": ID token, "a": access
/// token, "r": refresh token (absent without one), "c": created, "u": last used}`, times in
/// Unix milliseconds.
struct SessionSealer: Sendable {
    private let sealer: OutcomeSealer
    private let selectorKey: SymmetricKey

    init(key: SharedStateConfiguration.EncryptionKey) {
        self.sealer = OutcomeSealer(key: key)
        self.selectorKey = Self.selectorKey(sharedStateKey: key.bytes)
    }

    /// The key of the `sid` and `sub` hashes: HKDF-SHA-256 from the shared-state key under a
    /// label of its own, so every instance on one database computes the same hashes.
    static func selectorKey(sharedStateKey: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: sharedStateKey), salt: Array("auth-gateway".utf8),
            info: Array("browser session selectors v1".utf8), outputByteCount: 32)
    }

    func seal(_ record: SessionRecord, for digest: TokenDigest) -> [UInt8] {
        var document: JSONObject = [
            "s": .string(record.subject), "t": .string(record.idToken), "a": .string(record.accessToken),
            "c": .number(JSONNumber(Self.milliseconds(record.createdAt))),
            "u": .number(JSONNumber(Self.milliseconds(record.lastUsedAt))),
        ]
        if let sid = record.providerSessionID { document["i"] = .string(sid) }
        if let refreshToken = record.refreshToken { document["r"] = .string(refreshToken) }
        return self.sealer.seal(document: .object(document), for: digest)
    }

    func open(_ sealed: [UInt8], for digest: TokenDigest) throws(OutcomeSealer.OpenError) -> SessionRecord {
        let document = try self.sealer.openDocument(sealed, for: digest)
        guard let subject = document["s"]?.stringValue, let idToken = document["t"]?.stringValue,
            let accessToken = document["a"]?.stringValue, let created = document["c"]?.numberValue?.double,
            let used = document["u"]?.numberValue?.double
        else { throw OutcomeSealer.OpenError(reason: .unreadable) }
        return SessionRecord(
            subject: subject, providerSessionID: document["i"]?.stringValue, idToken: idToken,
            accessToken: accessToken, refreshToken: document["r"]?.stringValue, createdAt: created / 1000,
            lastUsedAt: used / 1000)
    }

    /// The stored hash of a provider session `sid` (HMAC-SHA-256).
    func providerSessionHash(_ sid: String) -> [UInt8] { self.hash("sid", sid) }

    /// The stored hash of a subject (HMAC-SHA-256).
    func subjectHash(_ subject: String) -> [UInt8] { self.hash("sub", subject) }

    /// Back-channel logout's selection: by `sid` when the logout token names one, else by `sub`.
    func selector(providerSessionID sid: String?, subject: String?) -> SessionSelector? {
        if let sid { return .providerSession(self.providerSessionHash(sid)) }
        return subject.map { .subject(self.subjectHash($0)) }
    }

    private func hash(_ label: String, _ value: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("\(label):\(value)".utf8), using: self.selectorKey))
    }

    private static func milliseconds(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }
}
