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
        /// Where each kept entry was listed, for an error found once all are read: the path of
        /// an inline one, the element of the file's (no string kept per file entry, of which
        /// there may be a million).
        enum Origin {
            case inline(path: String)
            case file(element: Int)
        }
        var origins: [Origin] = []
        func add(_ entry: ConfigReader, _ origin: Origin) {
            defer { entry.finish() }
            guard let key = Self.apiKey(entry) else { return }
            if !seenIDs.insert(key.id).inserted { entry.error("id", "duplicate API key id \"\(key.id)\"") }
            configuration.keys.append(key)
            origins.append(origin)
        }
        for entry in section.objectArray("keys") ?? [] { add(entry, .inline(path: entry.path)) }
        if let name = section.nonEmptyString("keysFile") {
            let path = files.resolve(name)
            configuration.keysFile = path
            Self.forEachAPIKey(inFile: path, section: section, files: files) { count in
                seenIDs.reserveCapacity(count)
            } _: { element, entry in
                add(entry, .file(element: element))
            }
        }
        // The entries live as long as the configuration; growing the array by doubling can
        // leave half of it unused for good.
        if configuration.keys.capacity > configuration.keys.count + configuration.keys.count / 8 {
            configuration.keys = configuration.keys.withUnsafeBufferPointer { Array($0) }
        }
        let (index, repeated) = APIKeyIndex.build(configuration.keys)
        for position in repeated {
            let path =
                switch origins[position] {
                case .inline(let path): path
                case .file(let element): "\(section.childPath("keysFile"))[\(element)]"
                }
            section.issues.add("\(path).sha256", "the same key is listed twice")
        }
        configuration.index = index
        if !section.has("keys") && !section.has("keysFile") {
            section.error("apiKeys needs \"keys\", \"keysFile\" or both")
        }
        return configuration
    }

    /// Hands each entry of a keys file (a JSON array of key objects) to `body` as a reader whose
    /// path names the file's element (`tokens.apiKeys.keysFile[2].sha256`), one element parsed at
    /// a time: a million keys never exist as one JSON tree. `expecting` first gets an estimate of
    /// the count (from the file's size) for the duplicate check to reserve.
    private static func forEachAPIKey(
        inFile path: String, section: ConfigReader, files: FileResolver, expecting: (Int) -> Void,
        _ body: (_ element: Int, ConfigReader) -> Void
    ) {
        if let problem = files.unreadable(path) {
            section.error("keysFile", problem)
            return
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            section.error("keysFile", "\(path): cannot be read")
            return
        }
        // The smallest entry (`{"id":"a","sha256":"<64>","claims":{"sub":"a"}}`) is ~100 bytes.
        expecting(data.count / 100)
        let filePath = section.childPath("keysFile")
        let streamed = data.withUnsafeBytes { bytes -> Result<Bool, JSONParseError> in
            do throws(JSONParseError) {
                return .success(
                    try JSONValue.forEachElement(ofArrayIn: bytes) { index, element in
                        if let reader = section.reader(for: element, path: filePath, element: index) {
                            body(index, reader)
                        }
                    })
            } catch {
                return .failure(error)
            }
        }
        switch streamed {
        case .success(true): return
        case .success(false):
            do throws(JSONParseError) {
                let document = try JSONValue(parsingBytes: data)
                section.error("keysFile", "\(path): expected an array of keys, found \(document.typeName)")
            } catch {
                section.error("keysFile", "\(path): not a JSON document: \(error)")
            }
        case .failure(let error):
            section.error("keysFile", "\(path): not a JSON document: \(error)")
        }
    }

    /// `{id, sha256, claims, expires}`; nil (with the reasons recorded) when unusable.
    static func apiKey(_ entry: ConfigReader) -> APIKeyEntry? {
        let id = entry.nonEmptyString("id")
        var digest: TokenDigest?
        if let hex = entry.requiredString("sha256") {
            digest = TokenDigest(hex: hex)
            if digest == nil { entry.error("sha256", "must be the 64 hex digits of the key's SHA-256") }
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
        return APIKeyEntry(id: id, digest: digest, claims: claims, expiresAt: expiresAt)
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
