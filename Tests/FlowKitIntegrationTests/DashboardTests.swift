#if canImport(Glibc)
import Glibc
#endif
import FlowKitProcesses
import Foundation
import Testing

/// The web dashboard `flowkit cluster` serves, as a person and as a program see it: the page in
/// headless Chromium (its DOM once the script ran, and a screenshot), the live WebSocket, and emit
/// from the page's API.
extension ClusterProcessTests {
    @Test func theDashboardShowsTheClusterInABrowser() async throws {
        let chromiumPath = try #require(HeadlessChromium.installedPath, "chromium is not installed (scripts/install-deps --test installs it)")
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let dashboard = try await Self.dashboard(cluster)
            let url = dashboard.page
            let chromium = HeadlessChromium(path: chromiumPath, runner: cluster.runner, profile: cluster.directory + "/chromium")
            for _ in 0..<3 {
                let emit = try await cluster.flowkit(["emit", "counter/dash", #"{"increment":{}}"#, "--wait", "applied"])
                #expect(emit.exitCode == 0, "\(emit)")
            }
            // Emitted from the page's own API, through node-2.
            let fromPage = try await cluster.runner.run(
                "/usr/bin/curl",
                dashboard.curl("api/emit", ["-X", "POST", "-H", "content-type: application/json", "--data", #"{"address":"counter/page","event":"{\"add\":{\"_0\":5}}","node":"node-2"}"#])
            )
            #expect(fromPage.exitCode == 0 && fromPage.stdout.contains(#""seq":4"#), "\(fromPage)")
            let refused = try await cluster.runner.run(
                "/usr/bin/curl",
                dashboard.curl("api/emit", ["-w", "%{http_code}", "-X", "POST", "-H", "content-type: application/json", "--data", #"{"address":"counter/page","event":"{\"explode\":{}}"}"#])
            )
            #expect(refused.stdout.hasSuffix("400") && refused.stdout.contains("explode"), "a refusal says why: \(refused)")

            // The page, as the browser renders it once its script ran: three nodes alive, the entries.
            let page = try await eventually("the page with every node and entry", timeout: .seconds(60), every: .milliseconds(500)) {
                let dom = try await chromium.dom(url)
                let rows = dom.components(separatedBy: #"data-alive="true""#).count - 1
                return rows == 3 && dom.contains("counter/page") && dom.components(separatedBy: "counter/dash").count - 1 >= 3 ? dom : nil
            }
            #expect(page.contains(#"<b id="head">4</b>"#), "the head: \(page)")
            // Every node reported the head: the screenshot shows the cluster at rest.
            _ = try await eventually("every node at seq 4 on the page", timeout: .seconds(30), every: .milliseconds(500)) {
                try await chromium.dom(url).components(separatedBy: #"data-applied="4""#).count - 1 == 3 ? true : nil
            }
            try await chromium.screenshot(url, to: cluster.directory + "/dashboard.png")
            let png = try Data(contentsOf: URL(fileURLWithPath: cluster.directory + "/dashboard.png"))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "a screenshot: \(png.count) bytes")
            if let keep = ProcessInfo.processInfo.environment["FLOWKIT_DASHBOARD_SCREENSHOT"] { try png.write(to: URL(fileURLWithPath: keep)) }

            // A node stopped (cleanly, so the cluster's supervisor leaves it stopped; one killed
            // would be restarted within a second): the page shows it down.
            let node2 = try #require(try cluster.file().nodes.first { $0.name == "node-2" })
            kill(node2.pid, SIGTERM)
            _ = try await eventually("the page showing node-2 down", timeout: .seconds(60), every: .milliseconds(500)) {
                try await chromium.dom(url).contains(#"data-node="node-2" data-alive="false""#) ? true : nil
            }
            #expect(page.components(separatedBy: #"<td>counter/page</td>"#).count == 2, "each entry once: \(page)")
        }
    }

    /// `/live`: where things stand first, then every event as it is ordered, as JSON lines.
    @Test func theDashboardStreamsTheMonitorsEventsLive() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let dashboard = try await Self.dashboard(cluster)
            let first = try await cluster.flowkit(["emit", "counter/live", #"{"increment":{}}"#, "--wait", "applied"])
            #expect(first.exitCode == 0, "\(first)")
            _ = try await eventually("the dashboard saw the first entry and a status", timeout: .seconds(10), every: .milliseconds(100)) {
                let snapshot = try await cluster.runner.run("/usr/bin/curl", dashboard.curl("api/snapshot"))
                return snapshot.stdout.contains(#""seq":1"#) && snapshot.stdout.contains(#""type":"status""#) ? true : nil
            }
            let later = Task {
                try await Task.sleep(for: .milliseconds(500))
                return try await cluster.flowkit(["emit", "counter/live", #"{"increment":{}}"#])
            }
            let lines = try await Self.readLive(dashboard, until: #""seq":2"#)
            #expect(try await later.value.exitCode == 0)
            #expect(lines.first { $0.contains(#""type":"entry""#) && $0.contains(#""seq":1"#) } != nil, "the snapshot replays the first entry: \(lines)")
            #expect(lines.contains { $0.contains(#""type":"status""#) }, "and the last status")
            #expect(lines.last?.contains(#""address":"counter/live""#) == true, "then the live entry: \(lines)")
        }
    }

    /// What a browser's other pages (or a name rebound to 127.0.0.1) would send is refused with
    /// 403 and the reason, counted, and orders nothing (docs/SECURITY.md, "The dashboard").
    @Test func theDashboardRefusesWhatOtherPagesSend() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let dashboard = try await Self.dashboard(cluster)
            let event = #"{"address":"counter/stolen","event":"{\"increment\":{}}"}"#
            let json = ["-H", "content-type: application/json"]
            let cases: [(what: String, arguments: [String], reason: String)] = [
                ("no token", ["-sS", dashboard.base + "api/snapshot"], "token"),
                ("another token", ["-sS", "-H", "Authorization: Bearer 0123456789abcdef0123456789abcdef", dashboard.base + "api/info"], "token"),
                ("no token, the page", ["-sS", dashboard.base], "token"),
                ("no token, an emit", ["-sS", "-X", "POST"] + json + ["--data", event, dashboard.base + "api/emit"], "token"),
                ("a rebound name", dashboard.curl("api/snapshot", ["-H", "Host: evil.example:\(dashboard.authority.split(separator: ":").last!)"]), "host"),
                ("a rebound name, an emit", dashboard.curl("api/emit", ["-X", "POST", "-H", "Host: evil.example"] + json + ["--data", event]), "host"),
                ("another site's page", dashboard.curl("api/emit", ["-X", "POST", "-H", "Origin: http://evil.example"] + json + ["--data", event]), "origin"),
                ("a page on another port", dashboard.curl("api/cancel", ["-X", "POST", "-H", "Origin: http://127.0.0.1:8000"] + json + ["--data", #"{"address":"counter/stolen"}"#]), "origin"),
                ("text/plain, a simple request", dashboard.curl("api/emit", ["-X", "POST", "-H", "content-type: text/plain", "--data", event]), "content_type"),
                ("a form", dashboard.curl("api/emit", ["-X", "POST", "--data-urlencode", "address=counter/stolen"]), "content_type"),
            ]
            for (what, arguments, reason) in cases {
                let result = try await cluster.runner.run("/usr/bin/curl", arguments + ["-w", "\n%{http_code}"])
                #expect(result.stdout.hasSuffix("\n403") && result.stdout.contains(#""reason":"\#(reason)""#), "\(what): \(result.stdout)")
            }
            // The WebSocket: a page of another site, and no token.
            await #expect(throws: TestWebSocket.Failure.self, "a foreign page's upgrade") {
                try await TestWebSocket.connect(dashboard.live, headers: [dashboard.bearer, ("Origin", "http://evil.example")]) { _ in }
            }
            await #expect(throws: TestWebSocket.Failure.self, "an upgrade without the token") {
                try await TestWebSocket.connect(dashboard.live) { _ in }
            }
            let upgrade = try await cluster.runner.run(
                "/usr/bin/curl",
                dashboard.curl("live", ["-i", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                                        "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "-H", "Origin: http://evil.example"])
            )
            #expect(upgrade.stdout.hasPrefix("HTTP/1.1 403") && upgrade.stdout.contains(#""reason":"origin""#), "\(upgrade.stdout)")

            // Counted by reason; nothing was ordered: the first emit gets seq 1.
            let info = try await cluster.runner.run("/usr/bin/curl", dashboard.curl("api/info"))
            for (reason, least) in [("token", 4), ("host", 2), ("origin", 4), ("content_type", 2)] {
                let count = info.stdout.components(separatedBy: #""\#(reason)":"#).dropFirst().first.flatMap { Int($0.prefix { $0.isNumber }) } ?? 0
                #expect(count >= least, "\(reason) refusals counted: \(info.stdout)")
            }
            let first = try await cluster.flowkit(["emit", "counter/fair", #"{"increment":{}}"#, "--json"])
            #expect(first.stdout.contains(#""seq":1"#), "nothing refused was ordered: \(first)")
            #expect((cluster.process.stdoutText + cluster.process.stderrText()).contains("dashboard refused"), "refusals are logged")
        }
    }

    /// The dashboard `flowkit cluster` printed: its URL, with its token.
    static func dashboard(_ cluster: ClusterCommandProcess) async throws -> DashboardAddress {
        let printed = try await eventually("the dashboard's URL", timeout: .seconds(10), every: .milliseconds(100)) {
            cluster.process.stdoutText.split(separator: "\n").first { $0.hasPrefix("dashboard: http://") }.map { String($0.dropFirst("dashboard: ".count)) }
        }
        return try DashboardAddress(printed: printed)
    }

    /// The JSON lines of `/live`'s messages, until a message contains `until`.
    static func readLive(_ dashboard: DashboardAddress, until: String) async throws -> [String] {
        try await TestWebSocket.connect(dashboard.live, headers: [dashboard.bearer], maxMessageSize: 1 << 22) { socket in
            var lines: [String] = []
            while let text = try await socket.receiveText() {
                lines += text.split(separator: "\n").map(String.init)  // one or more JSON lines a message
                if text.contains(until) { break }
            }
            return lines
        }
    }
}

/// Debian's Chromium, headless: the DOM once the page's script has run, and screenshots.
struct HeadlessChromium {
    let path: String
    let runner: CommandRunner
    /// Its profile directory, the test's own.
    let profile: String

    static var installedPath: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private var flags: [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=\(profile)", "--virtual-time-budget=4000"]
    }

    func dom(_ url: String) async throws -> String {
        try await runner.run(path, flags + ["--dump-dom", url], timeout: .seconds(60)).stdout
    }

    func screenshot(_ url: String, to file: String) async throws {
        let result = try await runner.run(path, flags + ["--window-size=1200,1500", "--screenshot=\(file)", url], timeout: .seconds(60))
        guard FileManager.default.fileExists(atPath: file) else { throw HarnessError("no screenshot: \(result)") }
    }
}
