import AuthGateway
import Crypto
import Foundation

/// The demo's identity assertions (docs/assertions.md): a fresh ES256 key, made once per
/// process and written as the only (`current`) entry of a keys file of its own in a temporary
/// folder (mode 0600: it is a private key), which the demo configuration's `identityAssertion`
/// reads; and its public part, with which the echo backend verifies what the gateway signs.
public struct DemoAssertionKeys: Sendable {
    /// The `iss` of the demo's assertions.
    public static let issuer = "urn:auth-gateway:demo"
    public static let kid = "demo-1"

    /// The keys file (absolute path).
    public let keysFile: String
    /// The key's public part: the uncompressed point (`0x04 || x || y`).
    let publicKey: [UInt8]

    /// Made at first use; the demo cannot run without it.
    public static let shared: DemoAssertionKeys = {
        do {
            return try DemoAssertionKeys()
        } catch {
            fatalError("auth-gateway demo: cannot write its assertion key: \(error)")
        }
    }()

    private init() throws {
        var entry = try SigningKey.newEntry(kid: Self.kid, algorithm: .ES256).objectValue ?? JSONObject()
        entry["status"] = "current"
        guard let x = entry["jwk"]?["x"]?.stringValue.flatMap({ Base64URL.decode($0) }),
            let y = entry["jwk"]?["y"]?.stringValue.flatMap({ Base64URL.decode($0) })
        else { throw DemoKeyError() }
        self.publicKey = [0x04] + x + y
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "auth-gateway-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.keysFile = folder.appendingPathComponent("assertion-keys.json").path
        guard
            FileManager.default.createFile(
                atPath: self.keysFile, contents: Data(JSONValue.array([.object(entry)]).jsonText.utf8),
                attributes: [.posixPermissions: 0o600])
        else { throw DemoKeyError() }
    }

    /// What the echo backend checks the gateway's assertions with.
    public var check: EchoBackend.AssertionCheck {
        EchoBackend.AssertionCheck(header: "X-Gateway-Assertion", issuer: Self.issuer, keys: [Self.kid: self.publicKey])
    }

    struct DemoKeyError: Error {}
}

extension EchoBackend {
    /// How the echo backend checks an identity assertion before it shows it, as a backend
    /// should (docs/assertions.md, "Verifying assertions in a backend"): an ES256 signature by
    /// one of `keys` (by `kid`), `typ` `JWT`, `iss`, and `exp` in the future. The audience is
    /// shown, not checked: the echo backend answers for every route.
    public struct AssertionCheck: Sendable {
        public var header: String
        public var issuer: String
        /// `kid` → uncompressed P-256 point.
        public var keys: [String: [UInt8]]

        public init(header: String, issuer: String, keys: [String: [UInt8]]) {
            self.header = header
            self.issuer = issuer
            self.keys = keys
        }

        /// `{"verified": true, "header": {…}, "claims": {…}}`, or `{"verified": false, "error": …}`.
        public func verdict(_ token: String, now: Double) -> JSONValue {
            do throws(Refused) {
                let (header, claims) = try self.verify(token, now: now)
                return ["verified": true, "header": header, "claims": claims]
            } catch {
                return ["verified": false, "error": .string(error.reason)]
            }
        }

        struct Refused: Error {
            let reason: String
            init(_ reason: String) { self.reason = reason }
        }

        private func verify(_ token: String, now: Double) throws(Refused) -> (header: JSONValue, claims: JSONValue) {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
                let claimsBytes = Base64URL.decode(parts[1]),
                let signature = Base64URL.decode(parts[2]),
                let header = try? JSONValue(parsing: String(decoding: headerBytes, as: UTF8.self)),
                let claims = try? JSONValue(parsing: String(decoding: claimsBytes, as: UTF8.self))
            else { throw Refused("not a compact JWS") }
            guard header["alg"] == "ES256", header["typ"] == "JWT" else { throw Refused("not an ES256 JWT") }
            guard let kid = header["kid"]?.stringValue, let point = self.keys[kid],
                let key = try? P256.Signing.PublicKey(x963Representation: point)
            else { throw Refused("unknown kid") }
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                key.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
            else { throw Refused("bad signature") }
            guard claims["iss"]?.stringValue == self.issuer else { throw Refused("wrong issuer") }
            guard let expiry = claims["exp"]?.numberValue?.double, expiry > now else { throw Refused("expired") }
            return (header, claims)
        }
    }
}
