import Foundation
import Logging
import Synchronization

/// Who may use a dashboard (docs/SECURITY.md, "The dashboard"). Every request, the page and the
/// WebSocket upgrade included, passes ``check(_:)`` before anything else runs.
///
/// Any page the operator's browser opens may send requests to the dashboard, and a name an attacker
/// controls may be pointed at 127.0.0.1 (DNS rebinding). So, as Jupyter and the Docker API do, the
/// dashboard serves a request only when it carries this run's token (the cookie its printed URL
/// sets, `Authorization: Bearer`, or `?token=`), names the dashboard's own address in `Host`, comes
/// from the dashboard's own pages when a browser says where it comes from (`Origin`), and, for a
/// POST, says it carries JSON. A refusal is counted by reason and logged.
package final class DashboardAccess: Sendable {
    /// Why a request was refused.
    package enum Reason: String, CaseIterable, Codable, Sendable {
        /// `Host` names another address than the one the dashboard serves (DNS rebinding).
        case host
        /// No token, or not this run's.
        case token
        /// A browser says the request comes from another site's page.
        case origin
        /// A POST that does not say it carries JSON (a form, `text/plain`: what a page may send
        /// to any site without asking).
        case contentType = "content_type"
    }

    /// A refusal: its reason, and what to do about it.
    package struct Refusal: Error, Equatable, CustomStringConvertible {
        package var reason: Reason
        package var message: String
        package var description: String { message }
    }

    /// What a check reads of a request.
    package struct Request: Sendable {
        package var method: String
        package var path: String
        /// `Host` (HTTP/1.1), with its port.
        package var host: String?
        package var origin: String?
        package var contentType: String?
        package var authorization: String?
        /// Every `Cookie` header, as sent.
        package var cookies: [String]
        /// The query's `token`, if any.
        package var queryToken: String?

        package init(
            method: String, path: String, host: String?, origin: String? = nil, contentType: String? = nil, authorization: String? = nil,
            cookies: [String] = [], queryToken: String? = nil
        ) {
            self.method = method
            self.path = path
            self.host = host
            self.origin = origin
            self.contentType = contentType
            self.authorization = authorization
            self.cookies = cookies
            self.queryToken = queryToken
        }
    }

    /// This run's secret, 32 hex digits (128 random bits); `nil` when the operator turned it off
    /// (``init(listenHost:token:)`` allows that on loopback only).
    package let token: String?
    /// The host the dashboard listens on (`--listen`'s).
    package let listenHost: String
    private let port = Mutex(0)
    private let refused = Mutex<[Reason: Int]>([:])
    private let lastLogged = Mutex<[Reason: (at: ContinuousClock.Instant, suppressed: Int)]>([:])

    /// - Parameters:
    ///   - listenHost: Where the dashboard listens.
    ///   - token: `true` for a fresh token (the default); `false` serves without one, on loopback only.
    /// - Throws: ``DashboardAccessError`` for `token: false` beyond loopback.
    package init(listenHost: String, token: Bool = true) throws {
        guard token || Dashboard.isLoopback(listenHost) else {
            throw DashboardAccessError(
                "a dashboard without a token is only served on loopback; \(listenHost) is reachable from other machines (docs/SECURITY.md, \"The dashboard\")"
            )
        }
        self.listenHost = listenHost
        self.token = token ? Self.freshToken() : nil
    }

    /// 128 bits from the system's generator, as 32 hex digits.
    package static func freshToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    /// The port the dashboard listens on, once it is bound (a `Host` names it).
    package var boundPort: Int {
        get { port.withLock { $0 } }
        set { port.withLock { $0 = newValue } }
    }

    /// The cookie that carries the token in a browser: named after the port, since a browser keeps
    /// one set of cookies per host whatever the port, and two dashboards may share a host.
    package var cookieName: String { "flowkit-dashboard-\(boundPort)" }

    /// The `Set-Cookie` value that hands the token to the page: not readable by scripts, never sent
    /// with a request another site starts.
    package var setCookie: String? {
        token.map { "\(cookieName)=\($0); Path=/; HttpOnly; SameSite=Strict" }
    }

    /// The page's address, once bound: `http://127.0.0.1:7480/`.
    package var baseURL: String {
        "http://\(listenHost.contains(":") ? "[\(listenHost)]" : listenHost):\(boundPort)/"
    }

    /// The page's address with the token, as printed for the operator to open.
    package var pageURL: String {
        token.map { baseURL + "?token=" + $0 } ?? baseURL
    }

    /// The refusals so far, by reason (`/api/info`'s `refused`).
    package var refusals: [Reason: Int] { refused.withLock { $0 } }

    /// Whether `request` may be served; a ``Refusal`` says why not.
    package func check(_ request: Request) -> Refusal? {
        guard let host = request.host, allows(host: host) else {
            return Refusal(
                reason: .host,
                message: "this dashboard answers only to its own address (\(allowedHosts)); the request named \(request.host.map { "'\($0)'" } ?? "no Host")"
            )
        }
        if let token {
            let offered = [request.authorization.flatMap(Self.bearer), request.queryToken] + request.cookies.map(cookie)
            guard offered.contains(where: { $0.map { Self.equalInConstantTime($0, token) } ?? false }) else {
                return Refusal(
                    reason: .token,
                    message: "no dashboard token, or not this run's: open the URL the dashboard printed (it carries the token), or send 'Authorization: Bearer <token>' (dashboardToken in cluster.json)"
                )
            }
        }
        if let origin = request.origin, origin.lowercased() != "http://" + host.lowercased() {
            return Refusal(reason: .origin, message: "a page of \(origin) may not use this dashboard; only its own pages may")
        }
        if request.method == "POST", !(request.contentType.map(Self.isJSON) ?? false) {
            return Refusal(
                reason: .contentType,
                message: "a POST to the dashboard carries JSON ('Content-Type: application/json'); this one said \(request.contentType.map { "'\($0)'" } ?? "nothing")"
            )
        }
        return nil
    }

    /// Counts a refusal and logs it: the first of each reason every 10 s, with how many followed.
    package func record(_ refusal: Refusal, _ request: Request, logger: Logger) {
        refused.withLock { $0[refusal.reason, default: 0] += 1 }
        let now = ContinuousClock.now
        let suppressed: Int? = lastLogged.withLock { last in
            if let previous = last[refusal.reason], now - previous.at < .seconds(10) {
                last[refusal.reason]!.suppressed += 1
                return nil
            }
            defer { last[refusal.reason] = (now, 0) }
            return last[refusal.reason]?.suppressed ?? 0
        }
        guard let suppressed else { return }
        logger.warning(
            "dashboard refused \(request.method) \(request.path): \(refusal.message)\(suppressed > 0 ? " (\(suppressed) more refused for this reason since the last note)" : "")",
            metadata: ["flowkit.reason": "\(refusal.reason.rawValue)"]
        )
    }

    // MARK: Reading a request

    /// The names a `Host` may give, for the message.
    private var allowedHosts: String {
        isWildcard ? "any name, with port \(boundPort)" : allowedNames.map { "\($0):\(boundPort)" }.joined(separator: ", ")
    }

    /// A listener on every address cannot know the names it is reached by: it takes any, and
    /// leans on the token (which it cannot do without, ``init(listenHost:token:)``).
    private var isWildcard: Bool { ["0.0.0.0", "::", "*", ""].contains(listenHost) }

    private var allowedNames: [String] {
        var names = ["127.0.0.1", "localhost", "[::1]"]
        let own = listenHost.contains(":") ? "[\(listenHost)]" : listenHost.lowercased()
        if !names.contains(own) { names.append(own) }
        return names
    }

    /// `name:port` (or `[v6]:port`; a name alone means port 80) naming this dashboard.
    private func allows(host: String) -> Bool {
        let host = host.lowercased()
        let name: Substring
        let port: Int
        if let colon = host.lastIndex(of: ":"), !host[colon...].contains("]") {
            guard let number = Int(host[host.index(after: colon)...]) else { return false }
            (name, port) = (host[..<colon], number)
        } else {
            (name, port) = (host[...], 80)
        }
        guard port == boundPort, !name.isEmpty else { return false }
        return isWildcard || allowedNames.contains(String(name)) || (name.hasPrefix("127.") && Dashboard.isLoopback(String(name)))
    }

    private func cookie(_ header: String) -> String? {
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == cookieName { return parts[1] }
        }
        return nil
    }

    private static func bearer(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    private static func isJSON(_ contentType: String) -> Bool {
        contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }

    /// Compares without stopping at the first difference, so the time taken says nothing of how
    /// much of a guess was right.
    private static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let (a, b) = (Array(a.utf8), Array(b.utf8))
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// A dashboard that cannot be served as asked.
package struct DashboardAccessError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
