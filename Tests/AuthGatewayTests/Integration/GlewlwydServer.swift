import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// A throwaway Glewlwyd (the Debian package `glewlwyd`, 2.7), a real OpenID provider with an
/// RFC 7662 introspection endpoint and RFC 7009 revocation, for the introspection tests, and
/// the authorization code flow for the browser sign-in tests (GlewlwydServer+SignIn.swift).
///
/// Everything lives in a temporary folder the test owns: a SQLite database made from the
/// package's own `init.sqlite3.sql` (which creates the `admin` user, password `password`), a
/// config file, an RS256 key made by `openssl`. The server listens on 127.0.0.1 only, on a port
/// below the ephemeral range (`PostgresCluster.candidatePort`; another one when it cannot
/// bind), and is set up through its admin REST API (docs/API.md of Glewlwyd): a scope `api`, a
/// user, a confidential client allowed the password and client-credentials grants with HTTP
/// Basic authentication (`token_endpoint_auth_method: client_secret_basic`, without which
/// Glewlwyd refuses the client), and an OIDC plugin instance signing with the RSA key, whose
/// `introspection-revocation-allowed` and `introspection-revocation-allow-target-client` let
/// that client introspect and revoke the tokens issued to it. The same plugin instance has
/// the code flow, PKCE, the end-session endpoint and back-channel logout on, and the user has
/// the `openid` scope too; none of that changes the password and client-credentials grants.
///
/// Glewlwyd would run as root without complaint (checked with 2.7.5), but a test has no reason
/// to give a third-party server root: when the tests run as root, it runs as the unprivileged
/// user PostgreSQL runs as (`setpriv`), in a folder that user owns. Its life is
/// bounded twice: `stop()` (SIGTERM to Glewlwyd, then SIGKILL), and `timeout` around it (600 s,
/// its own alarm), should the test process die first. When the package is missing the test
/// fails with how to install it.
final class GlewlwydServer: Sendable {
    static let clientID = "gateway"
    static let username = "alice"
    /// The scope the tokens carry (Glewlwyd puts it in `aud` too).
    static let scope = "api"
    /// The OIDC plugin's cookie naming the user's OpenID session: its value is the `sid` of the
    /// ID tokens and logout tokens.
    static let sessionCookie = "GLEWLWYD2_OIDC_SID"
    let clientSecret = "gw-\(UUID().uuidString.prefix(12))"
    let userPassword = "pw-\(UUID().uuidString.prefix(12))"

    let port: Int
    let directory: URL
    private let process: ChildProcess

    var apiBase: String { "http://127.0.0.1:\(self.port)/api" }
    /// The OIDC plugin's issuer (its `iss` parameter, also the tokens' `iss`).
    var issuer: String { self.apiBase + "/oidc" }
    var jwksURL: String { self.issuer + "/jwks" }
    var introspectionURL: String { self.issuer + "/introspect" }
    /// Glewlwyd's own output (log level WARNING: no token is logged at that level).
    var log: String { self.process.standardOutput + self.process.standardError }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private init(port: Int, directory: URL, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    static let initScript = "/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz"

    /// A running, set-up server; with `servingLoginPage`, it serves its web application (its
    /// login page) too, from a copy (`webApplication(in:)`).
    static func start(servingLoginPage: Bool = false) async throws -> GlewlwydServer {
        let glewlwyd = try ExternalTool.require("glewlwyd", package: "glewlwyd")
        let sqlite = try ExternalTool.require("sqlite3", package: "sqlite3")
        let openssl = try ExternalTool.require("openssl", package: "openssl")
        guard FileManager.default.fileExists(atPath: Self.initScript) else {
            Issue.record(
                "\(Self.initScript) is missing: reinstall the glewlwyd package (apt-get install --reinstall -y glewlwyd) without excluding /usr/share/doc"
            )
            throw Failure(description: "no \(Self.initScript)")
        }
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("agglw-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let database = directory.appendingPathComponent("glewlwyd.sqlite3").path
            try await Self.run(
                "/bin/sh", ["-c", "gzip -dc \"$1\" | \"$2\" \"$3\"", "sh", Self.initScript, sqlite, database])
            let key = directory.appendingPathComponent("key.pem").path
            let publicKey = directory.appendingPathComponent("public.pem").path
            try await Self.run(
                openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
            try await Self.run(openssl, ["pkey", "-in", key, "-pubout", "-out", publicKey])
            let webApplication = servingLoginPage ? try await Self.webApplication(in: directory) : nil
            let owner = getuid() == 0 ? PostgresCluster.unprivilegedUser() : nil
            if let owner {
                // The database (and its journal, created beside it) must be writable by the server.
                try await Self.run("/bin/chown", ["-R", "\(owner.uid):\(owner.gid)", directory.path])
            }
            let server = try await Self.startOnAFreePort(
                glewlwyd, directory: directory, database: database, webApplication: webApplication, owner: owner)
            do {
                try await server.setUp(
                    privateKeyPEM: String(contentsOfFile: key, encoding: .utf8),
                    publicKeyPEM: String(contentsOfFile: publicKey, encoding: .utf8))
            } catch {
                let log = server.log
                await server.stop()
                throw Failure(description: "Glewlwyd set-up failed: \(error); its log: \(log)")
            }
            return server
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let result = try await ExternalTool.run(executable, arguments, timeout: .seconds(60))
        guard result.status == 0 else {
            throw Failure(
                description: "\(executable) \(arguments.prefix(2).joined(separator: " ")) failed: \(result.stderr)")
        }
    }

    /// Starts the server and waits (bounded) for `GET /config` to answer; a server that exits
    /// first (its port taken) is started again on another port.
    private static func startOnAFreePort(
        _ glewlwyd: String, directory: URL, database: String, webApplication: String?,
        owner: (uid: UInt32, gid: UInt32)?
    ) async throws -> GlewlwydServer {
        let asOwner =
            owner.map { ["/usr/bin/setpriv", "--reuid=\($0.uid)", "--regid=\($0.gid)", "--clear-groups"] } ?? []
        var failures: [String] = []
        for _ in 0..<5 {
            let port = PostgresCluster.candidatePort()
            let config = directory.appendingPathComponent("glewlwyd.conf")
            try Self.configuration(port: port, database: database, webApplication: webApplication)
                .write(to: config, atomically: true, encoding: .utf8)
            let process = try ChildProcess(
                ["/usr/bin/timeout", "600"] + asOwner + [
                    glewlwyd, "--config-file", config.path, "--log-mode", "console", "--log-level", "WARNING",
                ],
                workingDirectory: directory.path
            )
            let server = GlewlwydServer(port: port, directory: directory, process: process)
            let answered = await eventually(timeout: .seconds(30)) {
                guard process.isRunning else { return true }
                return (try? await server.request(TestRequest(.GET, "/config")))?.status == 200
            }
            if answered && process.isRunning { return server }
            failures.append("port \(port): \(server.log.suffix(400))")
            await server.stop(removingFiles: false)
        }
        try? FileManager.default.removeItem(at: directory)
        throw Failure(description: "Glewlwyd did not start after 5 tries: \(failures.joined(separator: "; "))")
    }

    /// The server's configuration (libconfig syntax; the keys of the package's
    /// /etc/glewlwyd/glewlwyd.conf). No `use_secure_connection`: the server refuses
    /// `false` without certificate files. With `webApplication`, its files are served at `/`
    /// (`static_files_path`, with a MIME type for each kind of file it has).
    private static func configuration(port: Int, database: String, webApplication: String?) -> String {
        let staticFiles = webApplication.map { path in
            let types = [
                (".html", "text/html"), (".css", "text/css"), (".js", "application/javascript"),
                (".json", "application/json"), (".png", "image/png"), (".ico", "image/x-icon"),
                (".svg", "image/svg+xml"), (".ttf", "font/ttf"), (".woff", "font/woff"), (".woff2", "font/woff2"),
            ]
            return """
                static_files_path="\(path)"
                static_files_mime_types = (
                \(types.map { "  { extension = \"\($0.0)\"\n    mime_type = \"\($0.1)\" }" }.joined(separator: ",\n"))
                );

                """
        }
        return """
            port=\(port)
            bind_address="127.0.0.1"
            external_url="http://127.0.0.1:\(port)"
            login_url="login.html"
            api_prefix="api"
            allow_origin="*"
            cookie_secure=0
            session_expiration=3600
            session_key="GLEWLWYD2_SESSION_ID"
            admin_scope="g_admin"
            profile_scope="g_profile"
            login_api_enabled=true
            user_module_path="/usr/lib/glewlwyd/user"
            client_module_path="/usr/lib/glewlwyd/client"
            user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
            plugin_module_path="/usr/lib/glewlwyd/plugin"
            hash_algorithm="SHA512"
            database =
            {
              type = "sqlite3"
              path = "\(database)"
            };
            \(staticFiles ?? "")
            """
    }

    static let webApplicationFiles = "/usr/share/glewlwyd/webapp"
    /// The web application's `config.json`: Debian 12's `glewlwyd-common` links
    /// `webapp/config.json` to /etc/glewlwyd/config-2.7.json, which it ships as a folder holding
    /// the `config.json` (so the link, as installed, names a folder). The file is read from
    /// whichever of the two is a file.
    static let webApplicationConfigurations = [
        "/etc/glewlwyd/config-2.7.json/config.json", "/etc/glewlwyd/config-2.7.json",
        "/usr/share/glewlwyd/webapp/config.json",
    ]

    /// A copy of the package's web application in `directory`, with its `config.json` a file
    /// (its `GlewlwydUrl` is `./`: the pages call the API on their own origin); its path.
    private static func webApplication(in directory: URL) async throws -> String {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: Self.webApplicationFiles + "/login.html"),
            let configuration = Self.webApplicationConfigurations.first(where: {
                FileManager.default.fileExists(atPath: $0, isDirectory: &isFolder) && !isFolder.boolValue
            })
        else {
            Issue.record(
                "Glewlwyd's web application (\(Self.webApplicationFiles), its config.json) is missing: apt-get install -y glewlwyd glewlwyd-common"
            )
            throw Failure(description: "no Glewlwyd web application")
        }
        let copy = directory.appendingPathComponent("webapp").path
        // Dereferenced: the package links jQuery, Bootstrap, Popper and the fonts from other
        // packages with relative links, which a copy elsewhere would leave dangling.
        try await Self.run("/bin/cp", ["-R", "-L", Self.webApplicationFiles, copy])
        try? FileManager.default.removeItem(atPath: copy + "/config.json")
        try FileManager.default.copyItem(atPath: configuration, toPath: copy + "/config.json")
        return copy
    }

    // MARK: Set-up through the admin API

    /// The `Cookie` header of a new session of Glewlwyd's `admin` user (password login).
    func adminSession() async throws -> String {
        let login = try await self.request(
            TestRequest(
                .POST, "/api/auth/", headers: [("Content-Type", "application/json")],
                body: #"{"username":"admin","password":"password"}"#))
        guard login.status == 200, let setCookie = login.header("set-cookie"),
            let cookie = setCookie.split(separator: ";").first
        else {
            throw Failure(description: "admin login answered \(login.status)")
        }
        return String(cookie)
    }

    /// An admin API call that must answer 200; returns the answer.
    @discardableResult
    func admin(
        _ method: HTTPMethod, _ path: String, _ body: JSONObject? = nil, session: String
    ) async throws -> TestResponse {
        let response = try await self.request(
            TestRequest(
                method, "/api" + path, headers: [("Content-Type", "application/json"), ("Cookie", session)],
                body: body.map { JSONValue.object($0).jsonText })
        )
        guard response.status == 200 else {
            throw Failure(description: "\(method) /api\(path) answered \(response.status): \(response.text)")
        }
        return response
    }

    private func setUp(privateKeyPEM: String, publicKeyPEM: String) async throws {
        let session = try await self.adminSession()
        func admin(_ path: String, _ body: JSONObject) async throws {
            try await self.admin(.POST, path, body, session: session)
        }
        try await admin(
            "/scope/",
            [
                "name": .string(Self.scope), "display_name": "API", "description": "auth-gateway tests",
                "password_required": false, "scheme": [:],
            ])
        try await admin(
            "/user/",
            [
                "username": .string(Self.username), "name": "Alice", "password": .string(self.userPassword),
                "scope": [.string(Self.scope), "openid"], "enabled": true,
            ]
        )
        try await admin(
            "/client/",
            [
                "client_id": .string(Self.clientID), "name": "auth-gateway", "confidential": true,
                "password": .string(self.clientSecret),
                "scope": [.string(Self.scope)], "enabled": true,
                "authorization_type": ["password", "client_credentials"],
                "token_endpoint_auth_method": ["client_secret_basic"], "redirect_uri": ["http://127.0.0.1/unused"],
            ]
        )
        try await admin(
            "/mod/plugin/",
            [
                "module": "oidc", "name": "oidc", "display_name": "OIDC", "enabled": true,
                "parameters": [
                    "iss": .string(self.issuer), "jwt-type": "rsa", "jwt-key-size": "256",
                    "key": .string(privateKeyPEM), "cert": .string(publicKeyPEM),
                    "access-token-duration": 600, "refresh-token-duration": 3600, "code-duration": 600,
                    "allow-non-oidc": true,
                    "auth-type-password-enabled": true, "auth-type-client-enabled": true,
                    "introspection-revocation-allowed": true, "introspection-revocation-allow-target-client": true,
                    // Browser sign-in (GlewlwydServer+SignIn.swift): the code flow with PKCE,
                    // refresh tokens, the end-session endpoint and back-channel logout. Front-
                    // channel logout too: without it the API behind Glewlwyd's end-session page
                    // (GET /api/oidc/session/<sid>/<client>) answers 400 and the page breaks.
                    "auth-type-code-enabled": true, "auth-type-refresh-enabled": true, "pkce-allowed": true,
                    "session-management-allowed": true, "session-cookie-name": .string(Self.sessionCookie),
                    "session-cookie-expiration": 3600, "back-channel-logout-allowed": true,
                    "front-channel-logout-allowed": true,
                ],
            ]
        )
    }

    // MARK: The OIDC plugin's endpoints

    /// A new access token (a JWT signed RS256) for the user, by the resource-owner password
    /// grant (RFC 6749 §4.3), the client authenticated with HTTP Basic.
    func accessToken() async throws -> String {
        let body = FormEncoding.body([
            ("grant_type", "password"), ("username", Self.username), ("password", self.userPassword),
            ("scope", Self.scope),
        ])
        let response = try await self.clientCall("/api/oidc/token", body: body)
        guard response.status == 200, let token = response.json?["access_token"]?.stringValue else {
            throw Failure(description: "the token endpoint answered \(response.status)")
        }
        return token
    }

    /// Revokes `token` (RFC 7009) as the client it was issued to.
    func revoke(_ token: String) async throws {
        let response = try await self.clientCall(
            "/api/oidc/revoke", body: FormEncoding.body([("token", token), ("token_type_hint", "access_token")]))
        guard response.status == 200 else {
            throw Failure(description: "the revocation endpoint answered \(response.status)")
        }
    }

    /// Glewlwyd's own answer about `token` (RFC 7662), asked directly.
    func introspect(_ token: String) async throws -> JSONValue {
        let response = try await self.clientCall(
            "/api/oidc/introspect", body: FormEncoding.body([("token", token), ("token_type_hint", "access_token")]))
        guard response.status == 200, let answer = response.json else {
            throw Failure(description: "the introspection endpoint answered \(response.status)")
        }
        return answer
    }

    private func clientCall(_ path: String, body: String) async throws -> TestResponse {
        let credentials = Data("\(Self.clientID):\(self.clientSecret)".utf8).base64EncodedString()
        return try await self.request(
            TestRequest(
                .POST, path,
                headers: [
                    ("Content-Type", "application/x-www-form-urlencoded"), ("Authorization", "Basic \(credentials)"),
                ], body: body)
        )
    }

    func request(_ request: TestRequest) async throws -> TestResponse {
        let connection = try await TestConnection.connect(port: self.port)
        var request = request
        request.headers.append(("Host", "127.0.0.1:\(self.port)"))
        do {
            let response = try await connection.send(request, timeout: .seconds(20))
            await connection.close()
            return response
        } catch {
            await connection.close()
            throw error
        }
    }

    // MARK: Stop

    /// SIGTERM, then SIGKILL after 5 s; the folder (database, key) is removed.
    func stop() async {
        await self.stop(removingFiles: true)
    }

    /// The real user id Glewlwyd runs as (from `/proc`), nil when it cannot be read.
    var serverUID: UInt32? {
        guard let server = self.serverProcess,
            let status = try? String(contentsOfFile: "/proc/\(server)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") })
        else { return nil }
        return line.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first.flatMap { UInt32($0) }
    }

    /// Glewlwyd itself: the child of `timeout`.
    private var serverProcess: pid_t? {
        let parent = self.process.processIdentifier
        guard let children = try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)
        else { return nil }
        return children.split(separator: " ").compactMap { pid_t($0) }.first
    }

    /// Glewlwyd is sent SIGTERM itself, not through `timeout`: the test process's threads block
    /// most signals, `timeout` inherits that mask and never sees a SIGTERM sent to it (a
    /// Glewlwyd outlived its test that way), whereas Glewlwyd waits for its signals with
    /// `sigwait`, whatever the mask. `timeout` exits with it; whatever is left after 5 s is
    /// killed.
    private func stop(removingFiles: Bool) async {
        let server = self.serverProcess
        if let server { _ = Glibc.kill(server, SIGTERM) }
        try? await self.process.exited(timeout: .seconds(5))
        if let server, Glibc.kill(server, 0) == 0 { _ = Glibc.kill(server, SIGKILL) }
        if removingFiles { try? FileManager.default.removeItem(at: self.directory) }
    }
}
