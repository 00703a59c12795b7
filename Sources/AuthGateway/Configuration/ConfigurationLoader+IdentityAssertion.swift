import Foundation

/// Reading `identityAssertion` with its keys file, and a route's `assertion`
/// (docs/assertions.md). The keys file is read and every key parsed here, at every (re)load:
/// a reload whose keys file is broken fails whole, and the keys in force stay.
extension ConfigurationLoader {
    /// Claim names an assertion sets itself; a mapped claim may not take one.
    static let registeredAssertionClaims: Set<String> = [
        "iss", "sub", "aud", "iat", "exp", "nbf", "jti", "auth", "cnf", "txn", "scope", "tctx", "rctx",
    ]

    static func identityAssertion(_ root: ConfigReader, files: FileResolver) -> IdentityAssertionConfiguration? {
        guard let section = root.object("identityAssertion") else { return nil }
        defer { section.finish() }
        let issuer = section.requiredString("issuer")
        var format = IdentityAssertionConfiguration.Format.jwt
        if let text = section.string("format") {
            if let parsed = IdentityAssertionConfiguration.Format(rawValue: text) {
                format = parsed
            } else {
                section.error("format", "must be \"jwt\" or \"txn-token\", not \"\(text)\"")
            }
        }
        var header: String?
        if let name = section.nonEmptyString("header") {
            if !HTTPToken.isValid(name) {
                section.error("header", "\"\(name)\" is not a valid header name")
            } else if Self.reservedAPIKeyHeaders.contains(name.lowercased()) || name.lowercased() == "host" {
                section.error("header", "\"\(name)\" carries something else already; choose a header of its own")
            } else {
                header = name
            }
        }
        let lifetime = section.duration("lifetimeSeconds") ?? 60
        var keysFile: String?
        var keys: AssertionKeySet?
        if let name = section.requiredString("keysFile") {
            let path = files.resolve(name)
            keysFile = path
            keys = Self.assertionKeys(path, section: section, files: files)
        }
        guard let issuer, let keysFile, let keys else { return nil }
        return IdentityAssertionConfiguration(
            issuer: issuer, keysFile: keysFile, keys: keys, header: header, lifetimeSeconds: lifetime, format: format)
    }

    /// The keys file: a JSON array of `{kid, status, privateKeyPEM | privateKeyPEMFile | jwk}`;
    /// `privateKeyPEMFile` is resolved against the keys file's folder. Errors name the file's
    /// element: `identityAssertion.keysFile[1].jwk`.
    static func assertionKeys(_ path: String, section: ConfigReader, files: FileResolver) -> AssertionKeySet? {
        if let problem = files.unreadable(path) {
            section.error("keysFile", problem)
            return nil
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: String(contentsOfFile: path, encoding: .utf8))
        } catch {
            section.error("keysFile", "\(path): not a JSON document: \(error)")
            return nil
        }
        guard case .array(let elements) = document else {
            section.error("keysFile", "\(path): expected an array of keys, found \(document.typeName)")
            return nil
        }
        let keyFiles = FileResolver(baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        var entries: [AssertionKeySet.Entry] = []
        var usable = true
        var kids: Set<String> = []
        for (index, element) in elements.enumerated() {
            guard let entry = section.reader(for: element, path: "\(section.childPath("keysFile"))[\(index)]") else {
                usable = false
                continue
            }
            defer { entry.finish() }
            let kid = entry.requiredString("kid")
            if let kid, !kids.insert(kid).inserted { entry.error("kid", "duplicate kid \"\(kid)\"") }
            var status: AssertionKeySet.Status?
            if let text = entry.requiredString("status") {
                status = AssertionKeySet.Status(rawValue: text)
                if status == nil {
                    entry.error("status", "must be \"next\", \"current\" or \"retired\", not \"\(text)\"")
                }
            }
            let key = Self.signingKey(entry, files: keyFiles)
            guard let kid, let status, let key else {
                usable = false
                continue
            }
            entries.append(AssertionKeySet.Entry(kid: kid, status: status, key: key))
        }
        let current = entries.filter { $0.status == .current }.count
        if usable && current != 1 {
            section.error(
                "keysFile",
                "\(path): exactly one key must have \"status\": \"current\" (found \(current))")
        }
        guard usable else { return nil }
        return AssertionKeySet(entries: entries)
    }

    /// The private key of one entry: exactly one of `privateKeyPEM`, `privateKeyPEMFile`, `jwk`.
    private static func signingKey(_ entry: ConfigReader, files: FileResolver) -> SigningKey? {
        let given = ["privateKeyPEM", "privateKeyPEMFile", "jwk"].filter { entry.has($0) }
        guard given.count == 1 else {
            for key in given { _ = entry.value(key) }
            entry.error("a key needs exactly one of \"privateKeyPEM\", \"privateKeyPEMFile\" or \"jwk\"")
            return nil
        }
        do throws(PublicKeyError) {
            switch given[0] {
            case "privateKeyPEM":
                guard let pem = entry.nonEmptyString("privateKeyPEM") else { return nil }
                return try SigningKey(pem: pem)
            case "privateKeyPEMFile":
                guard let name = entry.nonEmptyString("privateKeyPEMFile") else { return nil }
                let path = files.resolve(name)
                if let problem = files.unreadable(path) {
                    entry.error("privateKeyPEMFile", problem)
                    return nil
                }
                guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                    entry.error("privateKeyPEMFile", "\(path) is not UTF-8 text")
                    return nil
                }
                return try SigningKey(pem: pem)
            default:
                guard let object = entry.value("jwk")?.objectValue else {
                    entry.error("jwk", "expected an object (a private JWK)")
                    return nil
                }
                return try SigningKey(jwk: object)
            }
        } catch {
            entry.error(given[0], "cannot be used: \(error.message)")
            return nil
        }
    }

    /// `routes[].assertion`: `true`, `false`, or `{audience, claims}`; nil when absent or false.
    static func routeAssertion(_ entry: ConfigReader, backend: String?) -> RouteAssertion? {
        guard let value = entry.value("assertion") else { return nil }
        switch value {
        case .bool(let on):
            return on ? RouteAssertion(audience: backend ?? "") : nil
        case .object:
            guard let section = entry.reader(for: value, path: entry.childPath("assertion")) else { return nil }
            defer { section.finish() }
            var assertion = RouteAssertion(audience: section.nonEmptyString("audience") ?? backend ?? "")
            for member in section.members("claims") ?? [] {
                let path = member.path
                if Self.registeredAssertionClaims.contains(member.name) || member.name.isEmpty {
                    entry.issues.add(path, "\"\(member.name)\" is set by the gateway itself; choose another name")
                    continue
                }
                guard case .string(let text) = member.value, let field = IdentityValuePath(parsing: text),
                    field.source != .client, field.source != .request
                else {
                    entry.issues.add(path, "expected \"claims.<name>\", \"profile.<name>\" or \"dpop.jkt\"")
                    continue
                }
                assertion.claims.append(RouteAssertion.Claim(name: member.name, path: field))
            }
            return assertion
        default:
            entry.error("assertion", "expected true or an object, found \(value.typeName)")
            return nil
        }
    }
}
