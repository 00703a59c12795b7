import Foundation

/// Reading `tokens.apiKeys` (docs/policies.md, "API keys"): the header, inline `keys` and a
/// `keysFile`, which is read again at every reload (SIGHUP).
extension ConfigurationLoader {
    /// Headers an API key may not be presented in: they carry tokens and cookies already.
    static let reservedAPIKeyHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "dpop"]

    static func apiKeys(
        _ section: ConfigReader, files: FileResolver, tokenSources: [TokenSourceConfiguration]
    ) -> APIKeysConfiguration? {
        var configuration = APIKeysConfiguration()
        if let header = section.nonEmptyString("header") {
            let lowered = header.lowercased()
            let tokenHeader = tokenSources.contains {
                if case .header(let name, _, _) = $0 { return name.lowercased() == lowered }
                return false
            }
            if !HTTPToken.isValid(header) {
                section.error("header", "\"\(header)\" is not a valid header name")
            } else if Self.reservedAPIKeyHeaders.contains(lowered) || tokenHeader {
                section.error("header", "\"\(header)\" carries tokens already; choose a header of its own")
            } else {
                configuration.header = header
            }
        }
        var seenIDs: Set<String> = []
        var seenDigests: Set<[UInt8]> = []
        func add(_ entry: ConfigReader) {
            defer { entry.finish() }
            guard let key = Self.apiKey(entry) else { return }
            if !seenIDs.insert(key.id).inserted { entry.error("id", "duplicate API key id \"\(key.id)\"") }
            if !seenDigests.insert(key.sha256).inserted { entry.error("sha256", "the same key is listed twice") }
            configuration.keys.append(key)
        }
        for entry in section.objectArray("keys") ?? [] { add(entry) }
        if let name = section.nonEmptyString("keysFile") {
            let path = files.resolve(name)
            configuration.keysFile = path
            for entry in Self.apiKeysFile(path, section: section, files: files) { add(entry) }
        }
        if !section.has("keys") && !section.has("keysFile") {
            section.error("apiKeys needs \"keys\", \"keysFile\" or both")
        }
        return configuration
    }

    /// The entries of a keys file (a JSON array of key objects), each a reader whose path names
    /// the file's element: `tokens.apiKeys.keysFile[2].sha256`.
    private static func apiKeysFile(_ path: String, section: ConfigReader, files: FileResolver) -> [ConfigReader] {
        if let problem = files.unreadable(path) {
            section.error("keysFile", problem)
            return []
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: String(contentsOfFile: path, encoding: .utf8))
        } catch {
            section.error("keysFile", "\(path): not a JSON document: \(error)")
            return []
        }
        guard case .array(let elements) = document else {
            section.error("keysFile", "\(path): expected an array of keys, found \(document.typeName)")
            return []
        }
        return elements.enumerated().compactMap { index, element in
            section.reader(for: element, path: "\(section.childPath("keysFile"))[\(index)]")
        }
    }

    /// `{id, sha256, claims, expires}`; nil (with the reasons recorded) when unusable.
    static func apiKey(_ entry: ConfigReader) -> APIKeyEntry? {
        let id = entry.nonEmptyString("id")
        var digest: [UInt8]?
        if let hex = entry.requiredString("sha256") {
            digest = Self.hexBytes(hex)
            if digest?.count != 32 {
                entry.error("sha256", "must be the 64 hex digits of the key's SHA-256")
                digest = nil
            }
        }
        var claims: JSONObject?
        if let value = entry.value("claims") {
            if case .object(let object) = value, !object.isEmpty {
                claims = object
                if let sub = object["sub"], sub.stringValue == nil {
                    entry.error("claims.sub", "must be a string")
                }
            } else {
                entry.error("claims", "must be a non-empty object (the claims the key stands for)")
            }
        } else {
            entry.error("claims", "is required")
        }
        var expiresAt: Double?
        if let text = entry.nonEmptyString("expires") {
            expiresAt = Self.rfc3339(text)
            if expiresAt == nil {
                entry.error("expires", "\"\(text)\" is not an RFC 3339 date-time (e.g. 2027-01-01T00:00:00Z)")
            }
        }
        guard let id, let digest, let claims else { return nil }
        if entry.has("expires") && expiresAt == nil { return nil }
        return APIKeyEntry(id: id, sha256: digest, claims: claims, expiresAt: expiresAt)
    }

    /// Even-length hex (either case) as bytes; nil otherwise.
    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// An RFC 3339 date-time (`2027-01-01T00:00:00Z`, fractions and offsets allowed) as Unix seconds.
    static func rfc3339(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)?.timeIntervalSince1970
    }
}
