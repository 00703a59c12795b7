/// The open streams of one event loop by what can revoke them (docs/streams.md): a browser
/// session's digest, a provider session `sid` (a session's, or the `sid` claim of a bearer
/// token issued within one), a subject. A revocation reads the streams it names from here —
/// never a walk over every connection. Pure (no I/O, no clock), generic over what identifies a
/// stream so that it is tested with plain values.
///
/// Subjects are not scoped by issuer: a deployment whose issuers share subject names for
/// different people must not let one issuer's logout name the other's subjects.
struct StreamIndex<ID: Hashable> {
    enum Key: Hashable {
        case sessionDigest(TokenDigest)
        case providerSession(String)
        case subject(String)
    }

    /// A revocation: the streams it names.
    enum Selector: Hashable {
        /// One browser session (sign-out, a refused refresh, its end on another instance).
        case session(TokenDigest)
        /// The streams of the provider session `sid`, or — without one — every stream of the
        /// subject (back-channel logout, `session-revoked`).
        case sessions(providerSessionID: String?, subject: String?)
    }

    /// Most keys name one stream: kept without an array's allocation until a second comes.
    private enum Entries {
        case one(ID)
        case many([ID])
    }

    private var entries: [Key: Entries] = [:]

    /// The keys a stream with `credential` is found by.
    static func keys(of credential: StreamCredential) -> [Key] {
        var keys: [Key] = []
        if let session = credential.session { keys.append(.sessionDigest(session)) }
        if let sid = credential.providerSessionID { keys.append(.providerSession(sid)) }
        if let subject = credential.subject { keys.append(.subject(subject)) }
        return keys
    }

    mutating func insert(_ id: ID, keys: [Key]) {
        for key in keys {
            switch self.entries[key] {
            case nil: self.entries[key] = .one(id)
            case .one(let other): self.entries[key] = other == id ? .one(id) : .many([other, id])
            case .many(var ids):
                self.entries[key] = nil
                if !ids.contains(id) { ids.append(id) }
                self.entries[key] = .many(ids)
            }
        }
    }

    /// Forgets `id` under `keys` (those it was inserted with).
    mutating func remove(_ id: ID, keys: [Key]) {
        for key in keys {
            switch self.entries[key] {
            case nil: break
            case .one(let other): if other == id { self.entries[key] = nil }
            case .many(var ids):
                self.entries[key] = nil
                ids.removeAll { $0 == id }
                if ids.count == 1 {
                    self.entries[key] = .one(ids[0])
                } else if !ids.isEmpty {
                    self.entries[key] = .many(ids)
                }
            }
        }
    }

    func ids(_ key: Key) -> [ID] {
        switch self.entries[key] {
        case nil: return []
        case .one(let id): return [id]
        case .many(let ids): return ids
        }
    }

    /// The streams `selector` names, each once.
    func ids(_ selector: Selector) -> [ID] {
        switch selector {
        case .session(let digest):
            return self.ids(Key.sessionDigest(digest))
        case .sessions(let sid?, _):
            return self.ids(.providerSession(sid))
        case .sessions(nil, let subject?):
            return self.ids(.subject(subject))
        case .sessions(nil, nil):
            return []
        }
    }

    /// Keys with at least one stream (for the tests: nothing is left behind).
    var keyCount: Int { self.entries.count }
}
