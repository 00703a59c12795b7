/// A `postgres://user:password@host:port/database` connection URL (the libpq form, without
/// query parameters: TLS is set by `sharedState.postgres.tls`).
///
/// Its `description` never shows the password, so the URL can go into logs, `/healthz` and
/// configuration errors as it is.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    /// Host name or IP literal, without brackets.
    public var host: String
    public var port: Int
    public var username: String
    /// Percent-decoded; nil when the URL has none (trust or peer authentication).
    public var password: Secret?
    /// The database name; the user name when the URL has no path (as libpq does).
    public var database: String

    public var description: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let credentials = self.password == nil ? self.username : "\(self.username):***"
        return "postgres://\(credentials)@\(host):\(self.port)/\(self.database)"
    }

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Parses `text`. The reasons of a failure never quote the URL (it may hold a password).
    ///
    /// The credentials end at the last `@`, so a password taken from the environment may
    /// contain `@` or `/` unencoded; `%XX` sequences in the user name, password and database
    /// are decoded.
    public static func parse(_ text: String) -> Result<PostgresURL, ParseError> {
        let rest: Substring
        if let schemeEnd = text.range(of: "://"),
            ["postgres", "postgresql"].contains(text[..<schemeEnd.lowerBound].lowercased())
        {
            rest = text[schemeEnd.upperBound...]
        } else {
            return .failure(.init("must start with postgres:// or postgresql://"))
        }
        guard let at = rest.lastIndex(of: "@") else {
            return .failure(.init("has no user name (write postgres://USER:PASSWORD@HOST:PORT/DATABASE)"))
        }
        let userInfo = rest[..<at]
        let location = rest[rest.index(after: at)...]
        if location.contains("?") || location.contains("#") {
            return .failure(
                .init("must not have query parameters or a fragment (TLS is set by sharedState.postgres.tls)"))
        }
        let username: Substring
        var password: Secret?
        if let colon = userInfo.firstIndex(of: ":") {
            username = userInfo[..<colon]
            password = Secret(Self.percentDecoded(userInfo[userInfo.index(after: colon)...]))
        } else {
            username = userInfo
        }
        guard !username.isEmpty else {
            return .failure(.init("has no user name (write postgres://USER:PASSWORD@HOST:PORT/DATABASE)"))
        }
        let authorityEnd = location.firstIndex(of: "/") ?? location.endIndex
        let authority = location[..<authorityEnd]
        var database = location[authorityEnd...].dropFirst()

        let host: String
        let port: Int
        switch URLAuthority.hostAndPort(authority, defaultPort: 5432, example: "postgres://user@[::1]:5432/db") {
        case .success(let parsed): (host, port) = parsed
        case .failure(let problem): return .failure(.init(problem.message))
        }
        if database.hasSuffix("/") { database = database.dropLast() }
        guard !database.contains("/") else { return .failure(.init("has a path that is not a database name")) }
        let decodedUser = Self.percentDecoded(username)
        return .success(
            PostgresURL(
                host: host,
                port: port,
                username: decodedUser,
                password: password,
                database: database.isEmpty ? decodedUser : Self.percentDecoded(database)
            )
        )
    }

    /// `%XX` decoded as UTF-8; a `%` that does not start a valid escape stays as it is.
    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2, let high = Self.hexValue(utf8[utf8.startIndex]),
                let low = Self.hexValue(utf8[utf8.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
