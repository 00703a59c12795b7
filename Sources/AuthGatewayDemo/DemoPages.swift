import AuthGateway
import NIOCore
import NIOHTTP1

/// The demo provider's HTML pages: the login form, an error page and "signed out".
///
/// Every value that came with a request (client id, state, nonce, user name, …) goes through
/// `HTML.escape` before it is placed in the page, including hidden inputs; the pages load
/// nothing and may not be framed.
enum DemoPages {
    /// Element ids and field names the real-browser tests rely on.
    enum Field {
        static let userName = "username"
        static let password = "password"
        /// The submit buttons' `name`; their values are `signIn` and `cancel`.
        static let action = "action"
        static let signIn = "sign-in"
        static let cancel = "cancel"
    }

    static func login(
        _ request: DemoAuthorizationRequest, users: [DemoAuthService.User], userName: String?, error: String?
    ) -> SimpleResponse {
        let hidden = request.carriedValues.map { name, value in
            #"<input type="hidden" name="\#(HTML.escape(name))" value="\#(HTML.escape(value))">"#
        }
        let demoUsers = users.map {
            "<li><code>\(HTML.escape($0.userName))</code> / <code>\(HTML.escape($0.password))</code></li>"
        }
        let body = """
            <h1>Sign in</h1>
            <p>to <strong>\(HTML.escape(request.client.clientID))</strong> with the demo identity provider</p>
            \(error.map { #"<p class="error" id="error" role="alert">\#(HTML.escape($0))</p>"# } ?? "")
            <form method="post" action="/authorize">
            \(hidden.joined(separator: "\n"))
            <label for="\(Field.userName)">User name</label>
            <input id="\(Field.userName)" name="\(Field.userName)" autocomplete="username" value="\(HTML.escape(userName ?? ""))" required autofocus>
            <label for="\(Field.password)">Password</label>
            <input id="\(Field.password)" name="\(Field.password)" type="password" autocomplete="current-password" required>
            <button id="\(Field.signIn)" type="submit" name="\(Field.action)" value="\(Field.signIn)">Sign in</button>
            <button id="\(Field.cancel)" type="submit" name="\(Field.action)" value="\(Field.cancel)" formnovalidate>Cancel</button>
            </form>
            <p>Demo users:</p>
            <ul>\(demoUsers.joined())</ul>
            """
        return Self.page(.ok, title: "Sign in", body: body)
    }

    static func error(_ status: HTTPResponseStatus, title: String = "Sign-in error", detail: String) -> SimpleResponse {
        Self.page(
            status, title: title,
            body: #"<h1>\#(HTML.escape(title))</h1><p class="error" id="error">\#(HTML.escape(detail))</p>"#)
    }

    static func signedOut() -> SimpleResponse {
        Self.page(.ok, title: "Signed out", body: #"<h1 id="signed-out">You are signed out</h1>"#)
    }

    private static func page(_ status: HTTPResponseStatus, title: String, body: String) -> SimpleResponse {
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>\(HTML.escape(title)) · demo provider</title>
            <style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
            label,input,button{display:block;margin:.4rem 0}input{width:100%}.error{color:#b00020}</style>
            </head><body>
            \(body)
            </body></html>

            """
        let headers: HTTPHeaders = [
            "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
        ]
        return SimpleResponse(status: status, headers: headers, body: ByteBuffer(string: html))
    }
}
