import Crypto
import Foundation

/// One sign-in in progress (docs/browser-sign-in.md, "The flow"): the PKCE verifier, the nonce
/// and the return path, kept by the browser in a cookie of its own (`<flowCookiePrefix><id>`,
/// 10 minutes) and sealed with AES-256-GCM, so several tabs can sign in at once and any
/// instance holding the key can finish any flow. `state` is the flow's id: the callback finds
/// the cookie by it.
struct SignInFlow: Sendable, Equatable {
    /// 128 random bits, base64url: the OAuth `state` and the cookie name's suffix.
    let id: String
    /// RFC 7636 `code_verifier`: 256 random bits, base64url (43 characters).
    let verifier: String
    let nonce: String
    let returnPath: String
    /// Unix seconds; the cookie's own `Max-Age` ends at the same time.
    let expiresAt: Double

    static let lifetimeSeconds = 600.0
    /// Flow cookies a browser may hold at once; starting one more drops the oldest.
    static let maximumCookies = 5

    static func start(returnPath: String, now: Double) -> SignInFlow {
        SignInFlow(
            id: Self.random(bits: .bits128), verifier: Self.random(bits: .bits256), nonce: Self.random(bits: .bits128),
            returnPath: returnPath, expiresAt: now + Self.lifetimeSeconds)
    }

    /// RFC 7636 §4.2: `code_challenge` for `S256`.
    var challenge: String { Base64URL.encode(SHA256.hash(data: Array(self.verifier.utf8))) }

    private static func random(bits: SymmetricKeySize) -> String {
        SymmetricKey(size: bits).withUnsafeBytes { Base64URL.encode($0) }
    }

    /// Whether `id` has the shape of a flow id (22 base64url characters); anything else is not
    /// looked for (the `state` came from the outside).
    static func isFlowID(_ id: Substring) -> Bool {
        id.utf8.count == 22 && id.utf8.allSatisfy(Base64URL.isAlphabetByte)
    }
}

/// Seals flows into cookie values and opens them again (docs/browser-sign-in.md). The cookie's
/// name is the authenticated data, so a flow's value moved under another flow's name does not
/// open. The key comes from `sharedState.encryptionKeyBase64` (every instance opens every
/// flow), else it is random per process.
struct SignInFlowSealer: Sendable {
    private let key: SymmetricKey

    init(key: SymmetricKey) { self.key = key }

    /// The key for `sharedStateKey` (HKDF-SHA-256, its own label), or a random one.
    static func key(sharedStateKey: [UInt8]?) -> SymmetricKey {
        guard let sharedStateKey else { return SymmetricKey(size: .bits256) }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: sharedStateKey), salt: Array("auth-gateway".utf8),
            info: Array("browser sign-in flow v1".utf8), outputByteCount: 32)
    }

    func seal(_ flow: SignInFlow, cookieName: String) -> String {
        let document: JSONValue = [
            "v": .string(flow.verifier), "n": .string(flow.nonce), "r": .string(flow.returnPath),
            "e": .number(JSONNumber(Int(flow.expiresAt.rounded(.up)))),
        ]
        // Sealing with a fresh random nonce cannot fail for these sizes.
        let box = try! AES.GCM.seal(
            Array(document.jsonText.utf8), using: self.key, authenticating: Array(cookieName.utf8))
        return Base64URL.encode(box.combined!)
    }

    /// The flow a cookie holds, or nil when it is not authentic, not readable or expired.
    func open(_ value: Substring, cookieName: String, id: String, now: Double) -> SignInFlow? {
        guard let bytes = Base64URL.decode(value), let box = try? AES.GCM.SealedBox(combined: bytes),
            let plaintext = try? AES.GCM.open(box, using: self.key, authenticating: Array(cookieName.utf8)),
            case .object(let document)? = try? JSONValue(parsingBytes: plaintext),
            case .string(let verifier)? = document["v"], case .string(let nonce)? = document["n"],
            case .string(let returnPath)? = document["r"], case .number(let expiresAt)? = document["e"],
            now < expiresAt.double
        else { return nil }
        return SignInFlow(id: id, verifier: verifier, nonce: nonce, returnPath: returnPath, expiresAt: expiresAt.double)
    }
}
