import FlowKitCommands
import Testing

/// The dashboard's checks alone (docs/SECURITY.md, "The dashboard"): what each request needs.
@Suite struct DashboardAccessTests {
    private func access(listen: String = "127.0.0.1", port: Int = 7480, token: Bool = true) throws -> DashboardAccess {
        let access = try DashboardAccess(listenHost: listen, token: token)
        access.boundPort = port
        return access
    }

    private func get(_ path: String = "/api/info", host: String? = "127.0.0.1:7480", bearer: String? = nil) -> DashboardAccess.Request {
        DashboardAccess.Request(method: "GET", path: path, host: host, authorization: bearer.map { "Bearer \($0)" })
    }

    @Test func theTokenIsFreshAndCarriedThreeWays() throws {
        let access = try access()
        let token = try #require(access.token)
        #expect(token.count == 32 && token.allSatisfy(\.isHexDigit))
        #expect(try self.access().token != token, "a token per run")
        #expect(access.check(get(bearer: token)) == nil, "Authorization: Bearer")
        var cookie = get()
        cookie.cookies = ["theme=dark; flowkit-dashboard-7480=\(token); other=1"]
        #expect(access.check(cookie) == nil, "the cookie the printed URL sets")
        var query = get()
        query.queryToken = token
        #expect(access.check(query) == nil, "?token=")
        #expect(access.pageURL == "http://127.0.0.1:7480/?token=\(token)")
        #expect(access.setCookie == "flowkit-dashboard-7480=\(token); Path=/; HttpOnly; SameSite=Strict")
    }

    @Test func withoutTheTokenNothingIsServed() throws {
        let access = try access()
        let token = try #require(access.token)
        let lastDigitChanged = String(token.dropLast()) + (token.last == "0" ? "1" : "0")
        for request in [get(), get("/"), get("/live"), get(bearer: lastDigitChanged), get(bearer: token + "0")] {
            #expect(access.check(request)?.reason == .token, "\(request.path) \(request.authorization ?? "no token")")
        }
        var otherPort = get()
        otherPort.cookies = ["flowkit-dashboard-7481=\(token)"]
        #expect(access.check(otherPort)?.reason == .token, "another dashboard's cookie is not this one's")
    }

    @Test func theHostMustBeTheDashboardsOwnAddress() throws {
        let access = try access()
        let token = try #require(access.token)
        for host in ["127.0.0.1:7480", "localhost:7480", "LOCALHOST:7480", "[::1]:7480", "127.0.0.2:7480"] {
            #expect(access.check(get(host: host, bearer: token)) == nil, "\(host)")
        }
        for host in ["evil.example:7480", "127.0.0.1:7481", "127.0.0.1", "[::1]", "evil.example", "", "127.0.0.1:x"] {
            #expect(access.check(get(host: host, bearer: token))?.reason == .host, "\(host)")
        }
        #expect(access.check(get(host: nil, bearer: token))?.reason == .host, "no Host at all")
        let rebound = try #require(access.check(get(host: "evil.example:7480", bearer: token)))
        #expect(rebound.message.contains("127.0.0.1:7480") && rebound.message.contains("'evil.example:7480'"), "\(rebound.message)")
    }

    @Test func aNamedListenerTakesItsNameAndAWildcardOneAnyName() throws {
        let named = try access(listen: "10.0.0.5")
        #expect(named.check(get(host: "10.0.0.5:7480", bearer: named.token)) == nil)
        #expect(named.check(get(host: "10.0.0.6:7480", bearer: named.token))?.reason == .host)
        let wildcard = try access(listen: "0.0.0.0")
        #expect(wildcard.check(get(host: "flowkit.example:7480", bearer: wildcard.token)) == nil)
        #expect(wildcard.check(get(host: "flowkit.example:7481", bearer: wildcard.token))?.reason == .host, "the port still counts")
        #expect(wildcard.check(get(host: "flowkit.example:7480"))?.reason == .token)
        let v6 = try access(listen: "fd00::5")
        #expect(v6.check(get(host: "[fd00::5]:7480", bearer: v6.token)) == nil)
    }

    @Test func onlyItsOwnPagesMaySendFromABrowser() throws {
        let access = try access()
        let token = try #require(access.token)
        func post(origin: String?, contentType: String? = "application/json") -> DashboardAccess.Request {
            DashboardAccess.Request(
                method: "POST", path: "/api/emit", host: "127.0.0.1:7480", origin: origin, contentType: contentType, authorization: "Bearer \(token)"
            )
        }
        #expect(access.check(post(origin: nil)) == nil, "a program sends no Origin")
        #expect(access.check(post(origin: "http://127.0.0.1:7480")) == nil, "the page itself")
        for origin in ["http://evil.example", "http://127.0.0.1:8000", "https://127.0.0.1:7480", "null", "http://localhost:7480"] {
            #expect(access.check(post(origin: origin))?.reason == .origin, "\(origin)")
        }
        var upgrade = get("/live", bearer: token)
        upgrade.origin = "http://evil.example"
        #expect(access.check(upgrade)?.reason == .origin, "the WebSocket upgrade too")
        for type in ["application/json", "application/json; charset=utf-8", "Application/JSON"] {
            #expect(access.check(post(origin: nil, contentType: type)) == nil, "\(type)")
        }
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp"] {
            #expect(access.check(post(origin: nil, contentType: type))?.reason == .contentType, "\(type)")
        }
        #expect(access.check(post(origin: nil, contentType: nil))?.reason == .contentType, "a POST that says nothing")
    }

    @Test func withoutATokenOnLoopbackOnlyAndTheOtherChecksStay() throws {
        let open = try access(token: false)
        #expect(open.token == nil && open.setCookie == nil && open.pageURL == "http://127.0.0.1:7480/")
        #expect(open.check(get()) == nil)
        #expect(open.check(get(host: "evil.example:7480"))?.reason == .host)
        #expect(throws: DashboardAccessError.self) { try DashboardAccess(listenHost: "0.0.0.0", token: false) }
        #expect(throws: DashboardAccessError.self) { try DashboardAccess(listenHost: "10.0.0.5", token: false) }
    }
}
