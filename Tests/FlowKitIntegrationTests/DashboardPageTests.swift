#if canImport(Glibc)
import Glibc
#endif
@testable import FlowKitCluster
import FlowKitCommands
import FlowKitProcesses
import Foundation
import Testing

/// The dashboard's page used as a person uses it, in headless Chromium over the DevTools protocol:
/// its forms filled and submitted, a bench watched live, CURVE and a listener beyond loopback.
extension ClusterProcessTests {
    /// Emit, cancel, the instance view and the filter, each through the page's own form.
    @Test func thePagesFormsEmitCancelAndWatchAnInstance() async throws {
        try await Self.withClusterPage { cluster, page in
            try await page.evaluate(Self.submit("state-form", ["state-address": "counter/form"]))
            try await page.evaluate(Self.submit("emit-form", ["emit-address": "counter/form", "emit-event": #"{"add":{"_0":7}}"#, "emit-node": "node-3"]))
            let ordered = try await page.waitFor("the emit's answer", Self.text("result", startingWith: "ordered"))
            #expect(ordered == "ordered at seq 1 (epoch 1)")
            let seven = try await page.waitFor("the watched instance at 7", Self.text("state", containing: #""count": 7"#))
            #expect(seven.hasPrefix("counter/form after seq 1"), "\(seven)")

            // The watched instance follows its entries: an emit from elsewhere shows up without asking.
            let increment = try await cluster.flowkit(["emit", "counter/form", #"{"increment":{}}"#, "--wait", "applied"])
            #expect(increment.exitCode == 0, "\(increment)")
            _ = try await page.waitFor("the watched instance at 8", Self.text("state", containing: #""count": 8"#))

            try await page.evaluate(Self.submit("emit-form", ["emit-address": "counter/form", "emit-event": #"{"explode":{}}"#]))
            let refused = try await page.waitFor("the refusal", Self.text("result", startingWith: "refused"))
            #expect(refused.contains("explode"), "a refusal names the problem: \(refused)")
            #expect(!refused.hasPrefix("refused: {") && !refused.contains("\"error\""), "the refusal's message, not its JSON: \(refused)")

            try await page.evaluate(Self.submit("cancel-form", ["cancel-address": "counter/form", "cancel-id": "tick"]))
            #expect(try await page.waitFor("the cancel's answer", Self.text("result", startingWith: "cancel")) == "cancel ordered at seq 3")
            let cancelRow = try await page.waitFor(
                "the cancel among the entries", #"(document.querySelector('#entries tr[data-seq="3"]') || {}).innerText || null"#
            )
            #expect(cancelRow.contains("cancel tick"), "\(cancelRow)")
            let origin = try await page.evaluate(#"document.querySelector('#entries tr[data-seq="1"]').cells[3].textContent"#)
            #expect(origin == #""node-3""#, "the first entry came through node-3, as the form asked: \(origin)")

            // The filter keeps one instance's entries.
            #expect(try await cluster.flowkit(["emit", "counter/other", #"{"increment":{}}"#, "--wait", "applied"]).exitCode == 0)
            _ = try await page.waitFor("the other instance's entry", #"document.querySelector('#entries tr[data-seq="4"]') ? "yes" : null"#)
            try await page.evaluate(#"(() => { const f = document.getElementById("filter"); f.value = "counter/form"; f.dispatchEvent(new Event("input")); })()"#)
            let shown = try await page.evaluate(##"Array.from(document.querySelectorAll("#entries tbody tr")).map((row) => row.dataset.seq).join(",")"##)
            #expect(shown == #""3,2,1""#, "only counter/form's entries, newest first: \(shown)")
        }
    }

    /// A status naming a flow being upgraded shows its versions and the nodes holding the newer one
    /// back; a status without versions hides the section (docs/VERSIONING.md, "Rolling upgrade").
    @Test func theVersionsOfAFlowBeingUpgradedShow() async throws {
        try await Self.withClusterPage { _, page in
            // Drawn from a status as the coordinator publishes it during an upgrade, in one
            // evaluation: the next live status (none of whose flows is above version 1) redraws.
            let shown = try await page.evaluate(
                #"(() => { view.status = Object.assign({}, view.status, {versions: {notes: {agreed: 1, newest: 2, behind: ["node-2", "node-3"]}}}); "#
                    + #"stale.add("status"); render(); const row = document.querySelector('#versions tr[data-flow="notes"]'); "#
                    + #"return [document.getElementById("versions-section").hidden, row.innerText.replace(/\s+/g, " ").trim(), row.cells[2].className].join("|"); })()"#
            )
            #expect(shown == #""false|notes 1 2 node-2, node-3|bad""#, "\(shown)")
            let hidden = try await page.waitFor(
                "the next status hides the section", #"document.getElementById("versions-section").hidden ? "hidden" : null"#
            )
            #expect(hidden == "hidden")
        }
    }

    /// The controls stay where they are while the page fills: a timer ticks (a row of "Latest
    /// entries" a second, the nodes' figures changing), and a click on cancel whose press and
    /// release straddle the page's redraws still lands, and stops it.
    @Test func aClickOnCancelLandsWhileATimerTicks() async throws {
        try await Self.withClusterPage { cluster, page in
            let before = try await page.position(of: "#cancel-form button")
            #expect(try await cluster.flowkit(["emit", "timer/oven", #"{"toggleTimerButtonTapped":{}}"#]).exitCode == 0)
            _ = try await page.waitFor("three ticks among the entries", #"document.querySelectorAll('#entries tbody tr').length >= 4 ? "yes" : null"#, timeout: .seconds(20))
            let during = try await page.position(of: "#cancel-form button")
            #expect(during.top == before.top && during.left == before.left, "the cancel button moved from \(before) to \(during)")

            try await page.evaluate(#"(() => { document.getElementById("cancel-address").value = "timer/oven"; document.getElementById("cancel-id").value = "timer"; })()"#)
            // Held across at least two redraws (the page redraws at most four times a second).
            try await page.click("#cancel-form button", holding: .milliseconds(700))
            let answer = try await page.waitFor("the cancel's answer", Self.text("result", startingWith: "cancel"), timeout: .seconds(10))
            #expect(answer.hasPrefix("cancel ordered at seq"), "\(answer)")
            // The timer stops: once a tick already on its way has landed, no more are ordered.
            try await Task.sleep(for: .milliseconds(1_200))
            let head = try await page.evaluate("view.head")
            try await Task.sleep(for: .milliseconds(2_500))
            #expect(try await page.evaluate("view.head") == head, "ticks went on after the cancel")
        }
    }

    /// A bench against a running cluster shows on the cluster's own dashboard while it runs, then
    /// its result; a line that is not a bench's is refused with the reason.
    @Test func aBenchShowsLiveOnTheClustersDashboard() async throws {
        let chromium = try #require(HeadlessChromium.installedPath, "chromium is not installed (scripts/install-deps --test installs it)")
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let dashboard = try await Self.dashboard(cluster)
            let path = cluster.clusterDirectory + "/cluster.json"
            let file = try String(contentsOfFile: path, encoding: .utf8)
            #expect(file.contains(#""dashboard" : "\#(dashboard.base)""#), "cluster.json names the dashboard: \(file)")
            #expect(file.contains(#""dashboardToken" : "\#(dashboard.token)""#), "and its token: \(file)")
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            #expect(mode == 0o600, "cluster.json holds a secret: its owner's alone (mode \(String(mode, radix: 8)))")
            try await DevToolsPage.open(dashboard.page, chromium: chromium, directory: cluster.directory, runner: cluster.runner) { page in
                _ = try await page.waitFor("the page live", #"document.getElementById("connection").dataset.state === "live" ? "yes" : null"#)
                #expect(try await page.evaluate(#"document.getElementById("bench-section").hidden"#) == "true", "no bench yet, no bench panel")
                let bench = Task {
                    try await cluster.flowkit(
                        ["bench", "--attach", cluster.clusterDirectory, "--rate", "500", "--duration", "5", "--warmup", "1", "--no-baseline",
                         "--connections", "2", "--instances", "20", "--quiet"],
                        clusterDir: false, timeout: .seconds(120)
                    )
                }
                let running = try await page.waitFor("the bench measuring, live", Self.text("bench-title", containing: "measuring"), timeout: .seconds(60))
                #expect(running.contains("500 events/s offered"), "\(running)")
                let result = try await bench.value
                #expect(result.exitCode == 0, "\(result)")
                #expect(result.stderr.contains("live on the dashboard at \(dashboard.base)"), "\(result.stderr)")
                let done = try await page.waitFor("the bench's result", Self.text("bench-title", containing: "done"))
                #expect(done.contains("the end check passed"), "\(done)")
                let cells = try await page.evaluate(#"Array.from(document.getElementById("bench-applied").cells).map((cell) => cell.textContent).join("|")"#)
                let figures = cells.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).split(separator: "|").dropFirst().map { Double($0.replacingOccurrences(of: ",", with: "")) }
                #expect(figures.count == 6 && figures.allSatisfy { ($0 ?? 0) > 0 }, "p50, p90, p99, p99.9, max (ms) and the count: \(cells)")
                let points = try await page.evaluate("view.bench.seconds.length")
                #expect((Int(points) ?? 0) >= 4, "a point a second on the charts: \(points)")
            }
            let malformed = try await cluster.runner.run(
                "/usr/bin/curl", dashboard.curl("api/bench", ["-w", "%{http_code}", "-X", "POST", "-H", "content-type: application/json", "--data", #"{"type":"bench","run":""}"#])
            )
            #expect(malformed.stdout.hasSuffix("400") && malformed.stdout.contains("not a bench line"), "\(malformed)")
            // A body that is not one at all: the field it lacks, in a sentence, not the decoder's internals.
            let undecodable = try await cluster.runner.run(
                "/usr/bin/curl", dashboard.curl("api/bench", ["-w", "%{http_code}", "-X", "POST", "-H", "content-type: application/json", "--data", #"{"type":"bench"}"#])
            )
            #expect(undecodable.stdout.hasSuffix("400") && undecodable.stdout.contains("the body is not a bench line"), "\(undecodable)")
            #expect(!undecodable.stdout.contains("HTTPError") && !undecodable.stdout.contains("CodingKeys"), "\(undecodable)")
        }
    }

    /// With CURVE the dashboard connects with the cluster's client key and the page says so; a
    /// dashboard listening beyond loopback warns that its token is all that keeps others out, in
    /// both commands, and takes any name for itself (it cannot know them) but never no token.
    @Test func theDashboardWithCurveAndBeyondLoopback() async throws {
        try await ClusterCommandProcess.run(
            { ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo", "--curve", "--dashboard", "0.0.0.0:0"] }, clusterDirectory: "cluster"
        ) { cluster in
            let printed = try await eventually("the dashboard's line", timeout: .seconds(10), every: .milliseconds(100)) {
                cluster.process.stdoutText.split(separator: "\n").first { $0.hasPrefix("dashboard: ") }.map(String.init)
            }
            #expect(printed.contains("its token is all that keeps others out"), "\(printed)")
            let wildcard = try DashboardAddress(printed: String(printed.dropFirst("dashboard: ".count)))
            let port = try #require(URLComponents(string: wildcard.base)?.port)
            let dashboard = try DashboardAddress(printed: "http://127.0.0.1:\(port)/?token=\(wildcard.token)")
            let info = try await cluster.runner.run("/usr/bin/curl", dashboard.curl("api/info"))
            #expect(info.stdout.contains("CURVE on: this dashboard connects with the cluster's client key"), "\(info)")
            let elsewhere = try await cluster.runner.run("/usr/bin/curl", dashboard.curl("api/info", ["-H", "Host: flowkit.example:\(port)"]))
            #expect(elsewhere.stdout.contains("CURVE on"), "a listener on every address takes any name, with the token: \(elsewhere)")
            let noToken = try await cluster.runner.run("/usr/bin/curl", ["-sS", "-w", "%{http_code}", dashboard.base + "api/info"])
            #expect(noToken.stdout.hasSuffix("403") && noToken.stdout.contains(#""reason":"token""#), "but never without the token: \(noToken)")
            let emitted = try await cluster.runner.run(
                "/usr/bin/curl",
                dashboard.curl("api/emit", ["-X", "POST", "-H", "content-type: application/json", "--data", #"{"address":"counter/curve","event":"{\"increment\":{}}"}"#])
            )
            #expect(emitted.stdout.contains(#""seq":1"#), "an emit through CURVE with the client key: \(emitted)")
            if let chromium = HeadlessChromium.installedPath {
                let dom = try await HeadlessChromium(path: chromium, runner: cluster.runner, profile: cluster.directory + "/chromium").dom(dashboard.page)
                #expect(dom.contains(#"<span id="curve">CURVE on: this dashboard connects with the cluster's client key</span>"#), "\(dom)")
            }

            let attached = try await cluster.flowkit(["dashboard", "--listen", "0.0.0.0:0", "--duration", "2"], timeout: .seconds(30))
            #expect(attached.exitCode == 0, "\(attached)")
            #expect(attached.stdout.contains("its token is all that keeps others out"), "flowkit dashboard warns too: \(attached)")
            let loopback = try await cluster.flowkit(["dashboard", "--listen", "127.0.0.1:0", "--duration", "1"], timeout: .seconds(30))
            #expect(loopback.exitCode == 0 && loopback.stdout.contains("dashboard: http://127.0.0.1:") && loopback.stdout.contains("?token="), "\(loopback)")
            #expect(!loopback.stdout.contains("keeps others out"), "\(loopback)")
            let beyondWithout = try await cluster.flowkit(["dashboard", "--listen", "0.0.0.0:0", "--no-token", "--duration", "1"], timeout: .seconds(30))
            #expect(beyondWithout.exitCode != 0 && beyondWithout.stderr.contains("only served on loopback"), "no token beyond loopback is refused: \(beyondWithout)")
        }
    }

    /// What the checks are for, tried in a real browser that holds the dashboard's cookie: a page of
    /// another site (served from another port of this machine, so the cookie goes along) sends a
    /// no-cors POST, a JSON POST and opens the WebSocket; then a name rebound to 127.0.0.1 loads the
    /// dashboard, token and all. Nothing is served, nothing is ordered.
    @Test func aPageOfAnotherSiteCannotUseTheDashboard() async throws {
        let chromium = try #require(HeadlessChromium.installedPath, "chromium is not installed (scripts/install-deps --test installs it)")
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let dashboard = try await Self.dashboard(cluster)
            let site = cluster.directory + "/elsewhere"
            try FileManager.default.createDirectory(atPath: site, withIntermediateDirectories: true)
            try #"<!doctype html><title>elsewhere</title><p>another site"#.write(toFile: site + "/index.html", atomically: true, encoding: .utf8)
            let server = try ChildProcess.testChild(
                executable: "/usr/bin/python3", arguments: ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", site], name: "elsewhere",
                directory: cluster.directory
            )
            // Killed and reaped: a child left unreaped stays a zombie of the test binary for the rest
            // of the run (and Swift Testing's child monitor spins on it).
            defer { Task { await server.kill9() } }
            let port = try await eventually("the other site's port", timeout: .seconds(10), every: .milliseconds(50)) {
                server.stdoutText.split(separator: " ").firstIndex(of: "port").flatMap { Int(server.stdoutText.split(separator: " ")[$0 + 1]) }
            }
            let dashboardPort = try #require(URLComponents(string: dashboard.base)?.port)
            try await DevToolsPage.open(
                dashboard.page, chromium: chromium, directory: cluster.directory, runner: cluster.runner,
                arguments: ["--host-resolver-rules=MAP rebound.example 127.0.0.1"]
            ) { page in
                // The operator's page first: the browser now holds the dashboard's cookie.
                _ = try await page.waitFor("the page live", #"document.getElementById("connection").dataset.state === "live" ? "yes" : null"#)
                try await page.evaluate(#"location.href = "http://127.0.0.1:\#(port)/""#)
                _ = try await page.waitFor("the other site's page", #"document.title === "elsewhere" ? "yes" : null"#)
                let tries = try await page.evaluate(
                    #"""
                    (async () => {
                      const target = "\#(dashboard.base)";
                      const body = JSON.stringify({ address: "counter/stolen", event: '{"increment":{}}' });
                      const seen = [];
                      for (const type of ["text/plain", "application/x-www-form-urlencoded"]) {
                        const answer = await fetch(target + "api/emit", { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": type }, body });
                        seen.push(type + ": " + answer.type);
                      }
                      try {
                        await fetch(target + "api/emit", { method: "POST", credentials: "include", headers: { "content-type": "application/json" }, body });
                        seen.push("json: answered");
                      } catch (error) {
                        seen.push("json: blocked");
                      }
                      seen.push("websocket: " + await new Promise((resolve) => {
                        const socket = new WebSocket("ws://127.0.0.1:\#(dashboardPort)/live");
                        socket.onopen = () => resolve("open");
                        socket.onerror = () => resolve("refused");
                      }));
                      return seen.join(", ");
                    })()
                    """#
                )
                let seen = try JSONSerialization.jsonObject(with: Data(tries.utf8), options: [.fragmentsAllowed]) as? String
                // A no-cors request goes out (its answer unreadable, "opaque"), and is refused there.
                #expect(seen == "text/plain: opaque, application/x-www-form-urlencoded: opaque, json: blocked, websocket: refused", "\(tries)")

                // A name the attacker controls, pointed at 127.0.0.1: even with the token, not served.
                try await page.evaluate(#"location.href = "http://rebound.example:\#(dashboardPort)/?token=\#(dashboard.token)""#)
                let rebound = try await page.waitFor("the rebound load's answer", #"document.body && document.body.innerText.includes("reason") ? document.body.innerText : null"#)
                #expect(rebound.contains(#""reason":"host""#), "\(rebound)")
            }
            let info = try await cluster.runner.run("/usr/bin/curl", dashboard.curl("api/info"))
            #expect(info.stdout.contains(#""host":1"#) || info.stdout.contains(#""host":2"#), "the rebound load was refused for its name: \(info.stdout)")
            let first = try await cluster.flowkit(["emit", "counter/fair", #"{"increment":{}}"#, "--json"])
            #expect(first.stdout.contains(#""seq":1"#), "nothing the other site sent was ordered: \(first)")
        }
    }

    /// A `flowkit cluster` (no demo) with its dashboard open in headless Chromium, the page showing
    /// its three nodes alive.
    static func withClusterPage(_ body: @escaping @Sendable (ClusterCommandProcess, DevToolsPage) async throws -> Void) async throws {
        let chromium = try #require(HeadlessChromium.installedPath, "chromium is not installed (scripts/install-deps --test installs it)")
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let dashboard = try await Self.dashboard(cluster)
            try await DevToolsPage.open(dashboard.page, chromium: chromium, directory: cluster.directory, runner: cluster.runner) { page in
                _ = try await page.waitFor("three nodes alive on the page", #"document.querySelectorAll('#nodes tr[data-alive="true"]').length === 3 ? "yes" : null"#)
                try await body(cluster, page)
            }
        }
    }

    /// JavaScript that fills a form's fields and submits it as a click would.
    static func submit(_ form: String, _ fields: KeyValuePairs<String, String>) -> String {
        let assignments = fields.map { id, value in
            "document.getElementById(\(Self.javaScriptString(id))).value = \(Self.javaScriptString(value));"
        }
        return "(() => { \(assignments.joined(separator: " ")) document.getElementById(\(javaScriptString(form))).requestSubmit(); })()"
    }

    /// JavaScript: the element's text when it starts with `prefix`, else null.
    static func text(_ id: String, startingWith prefix: String) -> String {
        "(() => { const text = document.getElementById(\(javaScriptString(id))).textContent; return text.startsWith(\(javaScriptString(prefix))) ? text : null; })()"
    }

    /// JavaScript: the element's text when it contains `part`, else null.
    static func text(_ id: String, containing part: String) -> String {
        "(() => { const text = document.getElementById(\(javaScriptString(id))).textContent; return text.includes(\(javaScriptString(part))) ? text : null; })()"
    }

    static func javaScriptString(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed]), as: UTF8.self)
    }
}

/// The hub between the monitor and the pages, alone: what a page is sent under load.
@Suite struct DashboardHubTests {
    private func entries(_ seqs: ClosedRange<UInt64>) -> ClusterMonitor.Event {
        .entries(
            seqs.map { seq in
                Entry(seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq,
                      submittedAt: 0, committedAt: 0, address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8))
            }
        )
    }

    /// 20,000 entries in a burst reach a page as at most one send of the newest 50 per 100 ms (the
    /// next event carries what waited out), and a page that opens gets the latest 500 and the bench.
    @Test func aPageGetsTheLatestEntriesNotEveryOne() async throws {
        let hub = DashboardHub()
        let (_, replay, lines) = hub.join()
        #expect(replay.isEmpty)
        hub.publish(entries(1...10))  // the first send goes at once
        let burst = ContinuousClock.now
        for start in stride(from: UInt64(11), to: 20_000, by: 100) { hub.publish(entries(start...start + 99)) }
        let sends = Int((ContinuousClock.now - burst) / .milliseconds(100)) + 1
        try await Task.sleep(for: .milliseconds(120))
        hub.publish(entries(20_011...20_020))
        var received: [String] = []
        for await message in lines {
            received += message.split(separator: "\n").map(String.init)  // a message carries one or more lines
            if message.contains(#""seq":20020"#) { break }
        }
        let seqs = received.compactMap { line -> Int? in
            guard line.contains(#""type":"entry""#), let range = line.range(of: #""seq":"#) else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(seqs.prefix(10) == Array(1...10)[...], "the first entries at once: \(seqs.prefix(12))")
        #expect(seqs.suffix(50) == Array(19_971...20_020)[...], "then the newest 50: \(seqs.suffix(3))")
        #expect(seqs.count <= 10 + 50 * (sends + 1), "at most 50 a send, a send per 100 ms: \(seqs.count) entries in \(sends) × 100 ms")
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "in order, each once")

        let bench = BenchLive(
            run: "r1", step: 1, phase: .measuring, elapsed: 2, rate: 1_000, offered: 2_000, sent: 2_000, acknowledged: 1_990,
            orderedPerSecond: 1_000, appliedPerSecond: 1_000, lag: 0,
            ordered: .init(count: 1_000, p50: 500, p90: 900, p99: 1_500, p999: 2_000, max: 2_100), applied: .init(count: 1_000, p50: 700, p90: 1_000, p99: 1_900, p999: 2_500, max: 2_600)
        )
        hub.publish(bench: bench)
        let later = hub.join().snapshot
        #expect(later.filter { $0.contains(#""type":"entry""#) }.count == 500, "a new page gets the latest 500 entries")
        #expect(later.last?.contains(#""type":"bench""#) == true && later.last?.contains(#""p99":1900"#) == true, "and the bench's seconds: \(later.last ?? "")")
        #expect(bench.problem == nil)
        var bad = bench
        bad.run = ""
        #expect(bad.problem == "run must be 1 to 64 bytes")
    }

    /// With no page open the hub keeps the latest heartbeat as it came (encoding ten a second for
    /// nobody was most of an idle cluster command's CPU); a page that opens gets the latest one,
    /// and an open page gets them live, at most four a second.
    @Test func aPageGetsTheLatestHeartbeatWhenItOpensAndLiveAfter() async throws {
        let hub = DashboardHub()
        for head in UInt64(1)...30 { hub.publish(.heartbeat(ClusterMonitor.Heartbeat(epoch: 2, head: head, time: head))) }
        let (_, replay, lines) = hub.join()
        #expect(replay.count == 1 && replay[0].contains(#""type":"heartbeat""#) && replay[0].contains(#""head":30"#), "\(replay)")
        let start = ContinuousClock.now
        var head = UInt64(31)
        var received: [String] = []
        var iterator = lines.makeAsyncIterator()
        // Published every 20 ms for at least 0.6 s: the last one comes 0.6 s or more after the
        // first, however slowly this machine runs the loop, so at least one is sent.
        repeat {
            hub.publish(.heartbeat(ClusterMonitor.Heartbeat(epoch: 2, head: head, time: head)))
            head += 1
            try await Task.sleep(for: .milliseconds(20))
        } while ContinuousClock.now - start < .milliseconds(600)
        hub.publish(.heartbeat(ClusterMonitor.Heartbeat(epoch: 2, head: head, time: head)))
        let span = ContinuousClock.now - start
        hub.publish(.alarm(Alarm(kind: .nodeDown, message: "the end of the test")))
        while let message = await iterator.next() {
            received += message.split(separator: "\n").map(String.init)
            if message.contains(#""type":"alarm""#) { break }
        }
        let heartbeats = received.filter { $0.contains(#""type":"heartbeat""#) }
        let most = Int(span / .milliseconds(250)) + 1
        #expect((1...most).contains(heartbeats.count), "one per 250 ms at most over \(span), of \(head - 30) published: \(heartbeats.count)")
        let heads = heartbeats.compactMap { line -> UInt64? in
            guard let range = line.range(of: #""head":"#) else { return nil }
            return UInt64(line[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(heads.count == heartbeats.count && heads == heads.sorted() && heads.allSatisfy { $0 > 30 }, "the live ones, in order: \(heads)")
    }
}
