import Foundation

/// The spellings the request-target differential tests send (docs/forwarding.md, "Request
/// targets"): hand-written known attacks and controls, then a seeded generation of paths that
/// cross from `/public/` to `/admin/` (or pretend to) with the pieces servers read differently —
/// dots, slashes, backslashes, `;`, single and double escapes in both cases, upper-case names,
/// control bytes, overlong UTF-8 and the non-ASCII letters whose case mapping is ASCII.
///
/// Deterministic: the seed is fixed (and printed by the tests); `AUTH_GATEWAY_TARGET_SEED`
/// explores another one.
enum PathSpellings {
    static let defaultSeed: UInt64 = 0x0039_7A26_E7_00

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["AUTH_GATEWAY_TARGET_SEED"].flatMap { UInt64($0) } ?? Self.defaultSeed
    }

    /// Known attacks and controls, each for a reason.
    static let fixed: [String] = [
        // Controls: plain routes, and escapes that stay in their segment.
        "/public/x", "/admin/x", "/other/x", "/public/caf%C3%A9", "/public/caf%c3%a9", "/public/a%20b",
        "/public/%7Euser", "/public/a%3Fb", "/admin/users?next=/public/x",
        // The incident and its relatives.
        "/public/..%2Fadmin/users", "/public/..%2fadmin/users", "/public/%2e%2e/admin/users",
        "/public/%2E%2E%2Fadmin/users", "/public/../admin/users", "/public/./../admin/x", "/public/.%2e/admin/x",
        "/public/%2e./admin/x", "/public//../admin/x", "//admin/x", "///admin//x", "/./admin/x",
        "/public/..\\admin/x", "/public/..%5Cadmin/x", "/public/..%5cadmin/x", "/public\\..\\admin\\x",
        "/public/..;/admin/x", "/public/..%3B/admin/x", "/public/.;/../admin/x", "/admin;x/y", "/public;/../admin/x",
        "/public/%252e%252e/admin/x", "/public/..%252Fadmin/x", "/public/%25252e/x", "/public/%2525/x",
        "/public/%C0%AE%C0%AE/admin/x", "/public/%c0%ae%c0%ae%c0%afadmin/x", "/public/%E0%80%AE%E0%80%AE/admin/x",
        "/public/..%C0%AFadmin/x", "/public/..%EF%BC%8Fadmin/x", "/public/%ED%A0%80/x", "/public/%FF/x",
        "/admin%00/x", "/public/x%00/../../admin/x", "/public/..%00/admin/x", "/public/%0a/x", "/public/%09/x",
        "/public/%7F/x", "/../admin/x", "/public/../../admin/x", "/%2e%2e/admin/x",
        // A last `..`: Caddy 2.6 trims trailing dots before matching (`/admin/..` is `/admin/`).
        "/admin/..", "/admin/%2e%2e", "/admin/x/../..", "/public/x/..", "/admin/.", "/admin/x.", "/admin.",
        "/admin/..%20", "/admin./x", "/admin%20/x",
        // IIS's %u escapes, not escapes at all elsewhere.
        "/public/%u002e%u002e/admin/x", "/public/..%u2215admin/x",
        // Case: nginx and Python read paths case-sensitively, Caddy's path matchers do not.
        "/ADMIN/x", "/Admin/x", "/aDmIn/x", "/%41DMIN/x", "/%61dmin/x", "/adm%69n/x", "/PUBLIC/x",
        "/adm%C4%B0n/x", "/ADM%C4%B1N/x", "/publ%C4%B1c/x",
        // Not a request target at all.
        "/public/%", "/public/%zz", "/public/x#/../../admin/x", "*",
    ]

    static let heads = [
        "public", "public", "public", "admin", "other", "PUBLIC", "ADMIN", "Admin", "%61dmin", "%41dmin", "adm%69n",
        "adm%49n", "adm%C4%B0n", "p%75blic", "", ".", "..", "%2e", "public;x", "public%3B",
    ]
    static let separators = [
        "/", "/", "/", "/", "/", "/", "/", "/", "//", "/./", "\\", "%2F", "%2f", "%5C", "%5c", ";/", "/;/", "%252F",
        "%3B/", "/%2e/",
        "/%2E/", "%00/", "/%09/", "%C0%AF",
    ]
    static let steps = [
        "..", "..", "..", ".", "x", "users", "public", "admin", "%2e%2e", "%2E%2E", "%2e.", ".%2E", "%2e", "..;",
        "..;x", ".;", "%2e%2e%3b",
        "..%3B", "..%00", "%c0%ae%c0%ae", "%C0%AE", "...", "..%20", "%252e%252e", "%25%32%65%25%32%65", "x", "a%2Fb",
    ]
    static let leaves = [
        "x", "users", "", "caf%C3%A9", "a%20b", "%7Ealice", "x%3Fy", "%E2%84%AA", "%0a", "%0D%0A", "%7f", "x;y=1",
        "index.html", "x?q=/../admin", ".%2e", "%2e", "%ff",
    ]

    /// `count` spellings from `seed`, each `/<head><sep>(<step><sep>)*<head>/<leaf>`.
    static func generated(seed: UInt64, count: Int) -> [String] {
        var generator = SeededGenerator(seed: seed)
        var spellings: [String] = []
        for _ in 0..<count {
            var path = "/" + Self.heads.randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                path += Self.separators.randomElement(using: &generator)! + Self.steps.randomElement(using: &generator)!
            }
            path += Self.separators.randomElement(using: &generator)! + Self.heads.randomElement(using: &generator)!
            path += "/" + Self.leaves.randomElement(using: &generator)!
            spellings.append(path)
        }
        return spellings
    }

    /// The fixed spellings, then `generatedCount` generated ones not already there, as bytes.
    static func all(seed: UInt64, generatedCount: Int = 300) -> [[UInt8]] {
        var seen = Set<String>()
        var all: [[UInt8]] = []
        for spelling in Self.fixed + Self.generated(seed: seed, count: generatedCount)
        where seen.insert(spelling).inserted {
            all.append(Array(spelling.utf8))
        }
        // Raw bytes a client library would never send: a control byte and raw UTF-8.
        all.append(Array("/public/".utf8) + [0x01] + Array("x".utf8))
        all.append(Array("/public/caf".utf8) + [0xC3, 0xA9])
        all.append(Array("/public/".utf8) + [0xFF])
        return all
    }
}

/// Host spellings for the virtual-host tests: `admin.example.com` (a route of its own that needs
/// a token, and an nginx `server_name`) and another host, in the spellings that name servers
/// read differently.
enum HostSpellings {
    static let names = ["admin.example.com", "ADMIN.example.com", "Admin.Example.COM", "other.example.com"]
    static let prefixes = ["", "user@", "user:pw@", ".", "%61"]
    static let suffixes = ["", ".", "..", ":80", ".:80", ":", ":0080", ":99999", ":abc", ". ", "%2e", "_", "\\x"]

    /// Every name with every prefix and suffix, then the odd ones out.
    static var all: [[UInt8]] {
        var all: [[UInt8]] = []
        for name in Self.names {
            for prefix in Self.prefixes {
                for suffix in Self.suffixes { all.append(Array((prefix + name + suffix).utf8)) }
            }
        }
        all += [
            Array("\tadmin.example.com".utf8), Array("admin.example.com\t".utf8), Array(" admin.example.com ".utf8),
            Array("admin .example.com".utf8), Array("admin.example.com/x".utf8), Array("[::1]".utf8),
            Array("admin.example.com:80:80".utf8), Array("admin%2Eexample.com".utf8),
            [0xC3, 0xA9] + Array("admin.example.com".utf8), Array("admin.example.com".utf8) + [0x00],
            Array("".utf8),
        ]
        return all
    }
}
