import Testing

@testable import AuthGateway

@Suite("PostgresURL")
struct PostgresURLTests {
    func parse(_ text: String) -> Result<PostgresURL, PostgresURL.ParseError> { PostgresURL.parse(text) }

    @Test func readsTheLibpqForm() throws {
        let url = try self.parse("postgres://gateway:s3cret@db.internal:6432/auth").get()
        #expect(url.host == "db.internal")
        #expect(url.port == 6432)
        #expect(url.username == "gateway")
        #expect(url.password?.value == "s3cret")
        #expect(url.database == "auth")
    }

    @Test func defaultsPortAndDatabaseAsLibpqDoes() throws {
        let url = try self.parse("postgresql://gateway@DB.Internal").get()
        #expect(url.host == "db.internal")
        #expect(url.port == 5432)
        #expect(url.password == nil)
        #expect(url.database == "gateway")
        #expect(try self.parse("postgres://gateway@db/").get().database == "gateway")
    }

    @Test func decodesPercentEscapesAndTakesTheLastAtAsTheEndOfTheCredentials() throws {
        let encoded = try self.parse("postgres://gate%40way:p%2Fa%3As%25s@[::1]:5433/my%20db").get()
        #expect(encoded.username == "gate@way")
        #expect(encoded.password?.value == "p/a:s%s")
        #expect(encoded.host == "::1")
        #expect(encoded.port == 5433)
        #expect(encoded.database == "my db")
        // A password from the environment with "@", "/" or a lone "%" needs no encoding.
        let raw = try self.parse("postgres://gateway:p@ss/w%rd@127.0.0.1/auth").get()
        #expect(raw.password?.value == "p@ss/w%rd")
        #expect(raw.host == "127.0.0.1")
        #expect(raw.database == "auth")
    }

    @Test func printsWithoutThePassword() throws {
        let url = try self.parse("postgres://gateway:hunter2@db.internal/auth").get()
        #expect(url.description == "postgres://gateway:***@db.internal:5432/auth")
        #expect(!"\(url)".contains("hunter2"))
        #expect("\(url.password!)" == "<redacted>")
        #expect(!String(reflecting: url.password!).contains("hunter2"))
        #expect(
            try self.parse("postgres://gateway@[::1]/auth").get().description == "postgres://gateway@[::1]:5432/auth")
    }

    @Test(arguments: [
        ("mysql://u@h/d", "must start with postgres:// or postgresql://"),
        ("db.internal:5432", "must start with postgres:// or postgresql://"),
        ("postgres://db.internal/auth", "has no user name"),
        ("postgres://:secret@db.internal/auth", "has no user name"),
        ("postgres://u:secret@/auth", "has no host"),
        ("postgres://u:secret@db.internal:0/auth", "port must be between 1 and 65535"),
        ("postgres://u:secret@db.internal:99999/auth", "port must be between 1 and 65535"),
        ("postgres://u:secret@db.internal:abc/auth", "port must be between 1 and 65535"),
        ("postgres://u:secret@db.internal/auth?sslmode=require", "must not have query parameters"),
        ("postgres://u:secret@::1/auth", "IPv6 address without brackets"),
        ("postgres://u:secret@[::1/auth", "unterminated IPv6"),
        ("postgres://u:secret@db internal/auth", "invalid host"),
        ("postgres://u:secret@db.internal/auth/extra", "not a database name"),
    ])
    func refusesMalformedURLsWithoutQuotingThem(_ text: String, _ reason: String) {
        switch self.parse(text) {
        case .success(let url):
            Issue.record("accepted \(url)")
        case .failure(let error):
            #expect(error.description.contains(reason), "\(error)")
            #expect(!error.description.contains("secret"))
        }
    }
}
