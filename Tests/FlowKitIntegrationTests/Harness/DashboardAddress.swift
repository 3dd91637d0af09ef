import Foundation

/// A dashboard as the line it printed gives it: `dashboard: http://127.0.0.1:7480/?token=…`.
struct DashboardAddress: Sendable {
    /// The URL as printed, with the token: what a person opens.
    let page: String
    /// `http://host:port/`
    let base: String
    let token: String

    /// - Parameter printed: The URL (text after it, up to a space, is left out).
    init(printed: String) throws {
        let url = String(printed.prefix { $0 != " " })
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port,
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value
        else { throw HarnessError("not a dashboard URL with a token: \(printed)") }
        self.page = url
        self.base = "http://\(host):\(port)/"
        self.token = token
    }

    /// `host:port`, as a `Host` header names it.
    var authority: String { String(base.dropFirst("http://".count).dropLast()) }

    /// The live WebSocket's URL.
    var live: String { "ws://\(authority)/live" }

    /// The header that carries the token, for programs.
    var bearer: (String, String) { ("Authorization", "Bearer \(token)") }

    /// `curl` arguments for `path` with the token, `options` before the URL.
    func curl(_ path: String, _ options: [String] = []) -> [String] {
        ["-sS", "-H", "Authorization: Bearer \(token)"] + options + [base + path]
    }
}
