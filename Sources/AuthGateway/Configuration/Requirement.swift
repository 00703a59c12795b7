/// A route's `require` (docs/policies.md): one JSON object whose clauses must all hold.
///
/// Pure data, parsed and checked once at load (`Requirement+Parsing.swift`) and decided per
/// request by `RequirementCheck`. A clause is a `field → matcher` pair or one of the
/// combinators `anyOf`, `allOf` and `not`, which hold requirements in turn: a tree.
///
/// Every requirement and clause carries its JSON path in the configuration
/// (`routes[2].require.anyOf[1]["claims.groups"]`), worked out at load, so that a refusal can
/// name the failing clause without building anything on the request path.
public struct Requirement: Sendable, Equatable {
    /// Where the object sits in the configuration, e.g. `routes[2].require.anyOf[1]`.
    public let path: String
    /// In file order; all must hold (none: the requirement always holds).
    public let clauses: [RequirementClause]
    /// Whether a `profile.*` field appears anywhere in the tree: the route needs the profile.
    public let readsProfile: Bool
    /// `clauses` again, without ownership, for the evaluator's walk: reading a clause from
    /// `clauses` retains and releases it per request (measured: a quarter of a policy's cost,
    /// docs/benchmarks.md). Valid as long as this requirement is, since `clauses` owns them.
    let unretainedClauses: [Unmanaged<RequirementClause>]

    /// No requirement: a route without `require`.
    public static let empty = Requirement(path: "require", clauses: [])

    public init(path: String, clauses: [RequirementClause]) {
        self.path = path
        self.clauses = clauses
        self.readsProfile = clauses.contains { $0.readsProfile }
        self.unretainedClauses = clauses.map { Unmanaged.passUnretained($0) }
    }

    public static func == (lhs: Requirement, rhs: Requirement) -> Bool {
        lhs.path == rhs.path && lhs.clauses == rhs.clauses
    }

    public var isEmpty: Bool { self.clauses.isEmpty }

    /// Every field the tree reads, in file order (repeats included).
    public var fields: [IdentityValuePath] {
        self.clauses.flatMap(\.fields)
    }
}

/// One member of a requirement object.
///
/// A class, not a struct: the evaluator walks clauses on every request, and a reference is
/// one retain where a struct of strings, arrays and JSON values is many.
public final class RequirementClause: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `"claims.groups": "admin"`: the field's value satisfies the matcher.
        case field(IdentityValuePath, FieldMatcher)
        /// `"anyOf": [r, …]` (never empty): at least one requirement holds.
        case anyOf([Requirement])
        /// `"allOf": [r, …]` (never empty): every requirement holds.
        case allOf([Requirement])
        /// `"not": r`: the requirement does not hold.
        case not(Requirement)
    }

    /// The member's JSON path, e.g. `routes[2].require.anyOf[1]["claims.groups"]`: what a
    /// refusal names. The elements of `anyOf`/`allOf` have `<path>[i]`, a `not`'s requirement
    /// has the clause's own path.
    public let path: String
    public let kind: Kind
    /// `kind`'s field and matcher when it is `.field`, held once more by reference so that the
    /// evaluator reads them without copying the enum's payload on every request.
    let fieldTest: FieldTest?
    /// `fieldTest` without ownership, for the evaluator (as `Requirement.unretainedClauses`):
    /// valid as long as this clause is.
    let unretainedFieldTest: Unmanaged<FieldTest>?

    public init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
        if case .field(let field, let matcher) = kind {
            self.fieldTest = FieldTest(field: field, matcher: matcher)
        } else {
            self.fieldTest = nil
        }
        self.unretainedFieldTest = self.fieldTest.map { Unmanaged.passUnretained($0) }
    }

    public static func == (lhs: RequirementClause, rhs: RequirementClause) -> Bool {
        lhs.path == rhs.path && lhs.kind == rhs.kind
    }

    var readsProfile: Bool {
        switch self.kind {
        case .field(let field, _): return field.source == .profile
        case .anyOf(let requirements), .allOf(let requirements): return requirements.contains { $0.readsProfile }
        case .not(let requirement): return requirement.readsProfile
        }
    }

    var fields: [IdentityValuePath] {
        switch self.kind {
        case .field(let field, _): return [field]
        case .anyOf(let requirements), .allOf(let requirements): return requirements.flatMap(\.fields)
        case .not(let requirement): return requirement.fields
        }
    }

    /// One line for `check --request`: the field and its matcher as JSON, or the combinator
    /// (`anyOf`, 2 requirements). Configuration text only, never a request's value.
    public var summary: String {
        switch self.kind {
        case .field(let field, let matcher): return "\(field): \(matcher.jsonText)"
        case .anyOf(let requirements): return "anyOf (\(Self.count(requirements.count, "requirement")))"
        case .allOf(let requirements): return "allOf (\(Self.count(requirements.count, "requirement")))"
        case .not: return "not"
        }
    }

    static func count(_ count: Int, _ noun: String) -> String { count == 1 ? "1 \(noun)" : "\(count) \(noun)s" }
}

/// A field clause's field and matcher (`RequirementClause.fieldTest`).
final class FieldTest: Sendable {
    let field: IdentityValuePath
    let matcher: FieldMatcher

    init(field: IdentityValuePath, matcher: FieldMatcher) {
        self.field = field
        self.matcher = matcher
    }
}

/// What a field's value must satisfy. Each holds for the value itself or, when the value is
/// an array or a space-separated `scope`/`scp` string, for one of its elements (a request
/// header sent on several lines: for one of the lines).
public enum FieldMatcher: Sendable, Equatable {
    /// A JSON value, or `{"equals": v}`: equal (an array contains it).
    case equals(JSONValue)
    /// `{"in": [v, …]}` (never empty): `equals` for one of the values.
    case oneOf([JSONValue])
    /// `{"prefix": "s"}`: a string starting with `s` (never empty).
    case prefix(String)
    /// `{"suffix": "s"}`: a string ending with `s` (never empty).
    case suffix(String)
    /// `{"exists": true|false}`: the field has a value other than null, or has none.
    case exists(Bool)
    /// `{"cidr": [...]}` on `client.ip`: an address in one of the networks. `client.ip`
    /// equality and `in` are networks of one address each, so `::ffff:10.0.0.1` equals
    /// `10.0.0.1`.
    case cidr([CIDR])

    /// The matcher as the configuration could have written it.
    public var jsonText: String {
        switch self {
        case .equals(let value):
            if case .object = value { return JSONValue.object(JSONObject([("equals", value)])).jsonText }
            return value.jsonText
        case .oneOf(let values): return JSONValue.object(JSONObject([("in", .array(values))])).jsonText
        case .prefix(let text): return JSONValue.object(JSONObject([("prefix", .string(text))])).jsonText
        case .suffix(let text): return JSONValue.object(JSONObject([("suffix", .string(text))])).jsonText
        case .exists(let wanted): return JSONValue.object(JSONObject([("exists", .bool(wanted))])).jsonText
        case .cidr(let networks):
            return JSONValue.object(JSONObject([("cidr", .array(networks.map { .string($0.description) }))]))
                .jsonText
        }
    }
}
