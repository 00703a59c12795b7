import NIOHTTP1

/// The one place rules read who the caller is and where the request comes from: `require`
/// (`RequirementCheck`), identity headers (`RequestPlanner`) and rate-limit keys (`RateLimiter`)
/// all name values as `claims.<path>`, `profile.<path>`, `dpop.jkt`, `client.ip`,
/// `request.method` or `request.header.<name>`, and all read them here, so they always agree on
/// what a name means (docs/configuration.md, docs/policies.md).
///
/// A view, not a copy: built per use from the identity and the request, nothing allocated.
struct IdentityFields {
    /// What rules read of the identity, held apart rather than as an `Identity?`: reading a
    /// field through an optional `Identity` copied the whole identity (every string and array
    /// in it retained and released), once per clause of a policy (docs/benchmarks.md). All nil
    /// for an anonymous request.
    let token: VerifiedToken?
    let profile: JSONObject?
    let dpopThumbprint: String?
    let request: AuthRequest

    init(identity: Identity?, request: AuthRequest) {
        self.token = identity?.token
        self.profile = identity?.profile
        self.dpopThumbprint = identity?.dpopThumbprint
        self.request = request
    }

    /// The value `path` names; nil when the request has none (no identity, a missing claim, no
    /// profile, no DPoP proof, no such header). `request.header.<name>`: its first line.
    func value(_ path: IdentityValuePath) -> JSONValue? {
        switch path.source {
        case .claims:
            guard let token = self.token else { return nil }
            return IdentityLookup.value(named: path.name, segments: path.segments, in: token.claims)
        case .profile:
            guard let profile = self.profile else { return nil }
            return IdentityLookup.value(named: path.name, segments: path.segments, in: profile)
        case .dpop:
            return self.dpopThumbprint.map(JSONValue.string)
        case .client:
            return .string(self.request.clientIP)
        case .request:
            if let header = path.requestHeaderName {
                // The host rules read is the canonical one (docs/forwarding.md, "Request targets").
                if ASCII.equalsIgnoringCase(header, "host") { return self.request.target.host.map { .string(String($0.name)) } }
                return self.request.headers.first(name: header).map(JSONValue.string)
            }
            switch path.name {
            case "host": return self.request.target.host.map { .string(String($0.name)) }
            case "path": return .string(self.request.target.path)
            default: return .string(self.request.method.rawValue)
            }
        }
    }

    /// What a requirement's field holds: as `value`, except that a request header is every
    /// line of its name (a header sent twice is a list of two), read in place.
    func reading(_ path: IdentityValuePath) -> FieldReading {
        if let header = path.requestHeaderName, !ASCII.equalsIgnoringCase(header, "host") {
            return .headerLines(HeaderLines(headers: self.request.headers, name: header))
        }
        guard let value = self.value(path) else { return .absent }
        return .value(value)
    }

    /// `claims.<name>`: shorthand for rules that name a claim directly.
    func claim(_ name: String) -> JSONValue? {
        self.token.flatMap { IdentityLookup.value(named: name, in: $0.claims) }
    }

    /// `profile.<name>`.
    func profileValue(_ name: String) -> JSONValue? {
        self.profile.flatMap { IdentityLookup.value(named: name, in: $0) }
    }
}

/// A field as a requirement sees it (`IdentityFields.reading`).
enum FieldReading {
    /// No value: no identity, a missing claim, no profile, no DPoP proof.
    case absent
    case value(JSONValue)
    /// `request.header.<name>`: the lines of that name, in order; none when it was not sent.
    case headerLines(HeaderLines)
}

/// The values of one request header, by name (ASCII case-insensitive), walked in place.
struct HeaderLines: Sequence {
    let headers: HTTPHeaders
    let name: String

    struct Iterator: IteratorProtocol {
        var base: HTTPHeaders.Iterator
        let name: String

        mutating func next() -> String? {
            while let (name, value) = self.base.next() {
                if ASCII.equalsIgnoringCase(name, self.name) { return value }
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(base: self.headers.makeIterator(), name: self.name) }

    var isEmpty: Bool {
        var iterator = self.makeIterator()
        return iterator.next() == nil
    }
}
