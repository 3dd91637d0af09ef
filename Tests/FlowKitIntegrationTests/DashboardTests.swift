#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// The web dashboard `flowkit cluster` serves, as a person and as a program see it: the page in
/// headless Chromium (its DOM once the script ran, and a screenshot), the live WebSocket, and emit
/// from the page's API.
extension ClusterProcessTests {
    @Test func theDashboardShowsTheClusterInABrowser() async throws {
        let chromiumPath = try #require(HeadlessChromium.installedPath, "chromium is not installed (scripts/install-deps --test installs it)")
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let url = try await Self.dashboardURL(cluster)
            let chromium = HeadlessChromium(path: chromiumPath, runner: cluster.runner, profile: cluster.directory + "/chromium")
            for _ in 0..<3 {
                let emit = try await cluster.flowkit(["emit", "counter/dash", #"{"increment":{}}"#, "--wait", "applied"])
                #expect(emit.exitCode == 0, "\(emit)")
            }
            // Emitted from the page's own API, through node-2.
            let fromPage = try await cluster.runner.run(
                "/usr/bin/curl", ["-sS", "-X", "POST", "-H", "content-type: application/json", "--data", #"{"address":"counter/page","event":"{\"add\":{\"_0\":5}}","node":"node-2"}"#, url + "api/emit"]
            )
            #expect(fromPage.exitCode == 0 && fromPage.stdout.contains(#""seq":4"#), "\(fromPage)")
            let refused = try await cluster.runner.run(
                "/usr/bin/curl", ["-sS", "-w", "%{http_code}", "-X", "POST", "-H", "content-type: application/json", "--data", #"{"address":"counter/page","event":"{\"explode\":{}}"}"#, url + "api/emit"]
            )
            #expect(refused.stdout.hasSuffix("502") && refused.stdout.contains("explode"), "a refusal says why: \(refused)")

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

            // A node killed: the page shows it down.
            let node2 = try #require(try cluster.file().nodes.first { $0.name == "node-2" })
            kill(node2.pid, SIGKILL)
            _ = try await eventually("the page showing node-2 down", timeout: .seconds(60), every: .milliseconds(500)) {
                try await chromium.dom(url).contains(#"data-node="node-2" data-alive="false""#) ? true : nil
            }
            #expect(page.components(separatedBy: #"<td>counter/page</td>"#).count == 2, "each entry once: \(page)")
        }
    }

    /// `/live`: where things stand first, then every event as it is ordered, as JSON lines.
    @Test func theDashboardStreamsTheMonitorsEventsLive() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let url = try await Self.dashboardURL(cluster)
            let first = try await cluster.flowkit(["emit", "counter/live", #"{"increment":{}}"#, "--wait", "applied"])
            #expect(first.exitCode == 0, "\(first)")
            _ = try await eventually("the dashboard saw the first entry and a status", timeout: .seconds(10), every: .milliseconds(100)) {
                let snapshot = try await cluster.runner.run("/usr/bin/curl", ["-sS", url + "api/snapshot"])
                return snapshot.stdout.contains(#""seq":1"#) && snapshot.stdout.contains(#""type":"status""#) ? true : nil
            }
            let later = Task {
                try await Task.sleep(for: .milliseconds(500))
                return try await cluster.flowkit(["emit", "counter/live", #"{"increment":{}}"#])
            }
            let lines = try await Self.readLive(url.replacingOccurrences(of: "http://", with: "ws://") + "live", until: #""seq":2"#)
            #expect(try await later.value.exitCode == 0)
            #expect(lines.first { $0.contains(#""type":"entry""#) && $0.contains(#""seq":1"#) } != nil, "the snapshot replays the first entry: \(lines)")
            #expect(lines.contains { $0.contains(#""type":"status""#) }, "and the last status")
            #expect(lines.last?.contains(#""address":"counter/live""#) == true, "then the live entry: \(lines)")
        }
    }

    /// The URL `flowkit cluster` printed for its dashboard.
    static func dashboardURL(_ cluster: ClusterCommandProcess) async throws -> String {
        try await eventually("the dashboard's URL", timeout: .seconds(10), every: .milliseconds(100)) {
            cluster.process.stdoutText.split(separator: "\n").first { $0.hasPrefix("dashboard: http://") }.map { String($0.dropFirst("dashboard: ".count)) }
        }
    }

    /// The JSON lines of a WebSocket's messages, until a message contains `until`.
    static func readLive(_ url: String, until: String) async throws -> [String] {
        try await TestWebSocket.connect(url, maxMessageSize: 1 << 22) { socket in
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
