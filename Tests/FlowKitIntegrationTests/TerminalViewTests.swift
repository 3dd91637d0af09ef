#if canImport(Glibc)
import Glibc
#endif
import FlowKitCluster
import FlowKitCommands
import Foundation
import Testing

/// The live view a person watches: on a terminal (tmux here, driven by `send-keys` and read by
/// `capture-pane`) a screen redrawn in place that fits the window and gives the terminal back;
/// piped, lines that do not repeat themselves.
extension ClusterProcessTests {
    @Test func theTerminalViewRedrawsFitsAResizeAndGivesTheTerminalBack() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let tmux = Tmux(socket: "flowkit-test-\(getpid())", runner: cluster.runner)
            do {
                try await Self.driveTheTerminalView(cluster, tmux: tmux)
            } catch {
                print("tmux screen when it failed:\n\((try? await tmux.capture()) ?? "(none)")")
                _ = try? await tmux.run(["kill-server"])
                throw error
            }
            _ = try? await tmux.run(["kill-server"])
        }
    }

    private static func driveTheTerminalView(_ cluster: ClusterCommandProcess, tmux: Tmux) async throws {
        try await tmux.start(width: 110, height: 32)
        let settings = (before: cluster.directory + "/stty-before", afterQ: cluster.directory + "/stty-after-q", afterCtrlC: cluster.directory + "/stty-after-ctrl-c")
        let monitor = "\(cluster.binary) monitor --cluster-dir \(cluster.clusterDirectory)"
        try await tmux.type("stty -g > \(settings.before); \(monitor); echo exit=$?; stty -g > \(settings.afterQ)")

        // The screen: every node alive, as a table.
        _ = try await eventually("the monitor's screen", timeout: .seconds(15), every: .milliseconds(200)) {
            let screen = try await tmux.capture()
            return screen.contains("latest entries:") && screen.contains("node-3") && screen.contains("alive") ? screen : nil
        }
        // Entries show as they are ordered, on the same screen: redrawn in place, not scrolled.
        for _ in 0..<3 {
            let emit = try await cluster.flowkit(["emit", "counter/tmux", #"{"increment":{}}"#, "--wait", "applied"])
            #expect(emit.exitCode == 0, "\(emit)")
        }
        let withEntries = try await eventually("the entries on the screen", timeout: .seconds(10), every: .milliseconds(200)) {
            let screen = try await tmux.capture()
            return screen.components(separatedBy: "counter/tmux").count - 1 >= 3 ? screen : nil
        }
        #expect(withEntries.components(separatedBy: "latest entries:").count == 2, "one screen, drawn in place:\n\(withEntries)")
        #expect(try await tmux.format("#{alternate_on}") == "1", "the view draws on the alternate screen")

        // A smaller window: the next screen fits it.
        try await tmux.run(["resize-window", "-t", "view", "-x", "60", "-y", "18"])
        let fitted = try await eventually("a screen that fits 60×18", timeout: .seconds(10), every: .milliseconds(200)) {
            let screen = try await tmux.capture()
            let lines = screen.split(separator: "\n", omittingEmptySubsequences: false)
            let fits = lines.allSatisfy { $0.count <= 60 } && screen.contains("node-1") && screen.contains("q quits")
            return fits ? screen : nil
        }
        #expect(!fitted.contains("counter/tmux") || fitted.contains("latest entries:"), "\(fitted)")

        // `q` quits: the shell is back, the screen and the terminal's settings as they were.
        try await tmux.keys("q")
        let afterQ = try await eventually("the shell after q", timeout: .seconds(10), every: .milliseconds(200)) {
            let screen = try await tmux.capture()
            // The command line itself shows `exit=$?`: wait for the status the shell printed.
            return screen.contains(/exit=\d/) ? screen : nil
        }
        #expect(afterQ.contains("exit=0"), "\(afterQ)")
        #expect(!afterQ.contains("latest entries:"), "the alternate screen is gone:\n\(afterQ)")
        #expect(try await tmux.format("#{alternate_on}") == "0")
        _ = try await eventually("the settings written", timeout: .seconds(5)) { FileManager.default.fileExists(atPath: settings.afterQ) ? true : nil }
        #expect(try String(contentsOfFile: settings.before, encoding: .utf8) == String(contentsOfFile: settings.afterQ, encoding: .utf8), "stty after q")

        // Ctrl-C too.
        try await tmux.type("clear; \(monitor); echo stopped=$?; stty -g > \(settings.afterCtrlC)")
        _ = try await eventually("the monitor's screen again", timeout: .seconds(15), every: .milliseconds(200)) {
            try await tmux.capture().contains("latest entries:") ? true : nil
        }
        try await tmux.keys("C-c")
        let afterCtrlC = try await eventually("the shell after Ctrl-C", timeout: .seconds(10), every: .milliseconds(200)) {
            let screen = try await tmux.capture()
            return screen.contains(/stopped=\d/) ? screen : nil
        }
        #expect(!afterCtrlC.contains("latest entries:"), "the alternate screen is gone:\n\(afterCtrlC)")
        _ = try await eventually("the settings written", timeout: .seconds(5)) { FileManager.default.fileExists(atPath: settings.afterCtrlC) ? true : nil }
        #expect(try String(contentsOfFile: settings.before, encoding: .utf8) == String(contentsOfFile: settings.afterCtrlC, encoding: .utf8), "stty after Ctrl-C")
    }

    /// Piped (a log, CI), the view prints each entry and a status line only when it changed: an
    /// idle cluster does not print the same line every second.
    @Test func theLineViewPrintsAStatusLineOnlyWhenItChanged() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let monitor = Task { try await cluster.flowkit(["monitor", "--duration", "7"]) }
            try await Task.sleep(for: .seconds(3))
            for _ in 0..<2 {
                let emit = try await cluster.flowkit(["emit", "counter/p", #"{"increment":{}}"#])
                #expect(emit.exitCode == 0, "\(emit)")
            }
            let result = try await monitor.value
            #expect(result.exitCode == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            let statuses = lines.filter { $0.hasPrefix("status ") }
            #expect(lines.filter { $0.contains("counter/p") }.count == 2, "both entries:\n\(result.stdout)")
            // About 7 statuses arrived (one a second); only the changes were printed.
            #expect(!statuses.isEmpty && statuses.count <= 4, "\(result.stdout)")
            #expect(zip(statuses, statuses.dropFirst()).allSatisfy { $0 != $1 }, "no status line twice in a row:\n\(result.stdout)")
        }
    }

    @Test func theScreenFitsItsRowsAndDrawsLagAsABar() {
        var filter = StatusLineFilter(repeatAfter: .seconds(30))
        let start = ContinuousClock.now
        let admitted = [
            filter.admits("status head=1", at: start),
            filter.admits("status head=1", at: start + .seconds(1)),  // the same, a second later
            filter.admits("seq 2 counter/a", at: start + .seconds(1)),
            filter.admits("status head=2", at: start + .seconds(2)),
            filter.admits("status head=2", at: start + .seconds(33)),  // the same, past 30 s
        ]
        #expect(admitted == [true, false, true, true, true])
        #expect(MonitorView.bar(0, of: 10, width: 5) == "·····")
        #expect(MonitorView.bar(1, of: 1_000, width: 5) == "█····")
        #expect(MonitorView.bar(10, of: 10, width: 5) == "█████")
        #expect(MonitorView.sparkline([0, 4, 8]) == "▁▄█")
        let screen = MonitorView().screen(title: "t", rows: 12, columns: 80)
        #expect(screen.count == 12 && screen.last == "q quits", "\(screen)")
    }

    /// Digests differ only at the same seq; a busy node's digest (digestSeq 0) describes none.
    @Test func theScreenComparesDigestsOnlyAtTheSameSeq() {
        func node(_ id: UInt32, digest: String, at seq: UInt64) -> ClusterStatus.Node {
            .init(id: id, name: "node-\(id)", clientEndpoint: "", applied: 100, lag: 0, alive: true, lastSeenMillis: 0, digest: digest,
                  instances: 1, runningEffects: 0, pendingSubmissions: 0, digestSeq: seq)
        }
        func screen(_ nodes: [ClusterStatus.Node]) -> String {
            var view = MonitorView()
            view.apply(.status(ClusterStatus(epoch: 1, head: 100, firstSeq: 1, entriesPerSecond: 0, nodes: nodes, divergences: 0, quarantined: 0)))
            return view.screen(title: "t", rows: 20, columns: 120).joined(separator: "\n")
        }
        let busy = screen([node(1, digest: "aaaa", at: 0), node(2, digest: "bbbb", at: 0), node(3, digest: "cccc", at: 100)])
        #expect(!busy.contains("DIFFERS") && busy.components(separatedBy: "(being hashed)").count == 3, "\(busy)")
        let apart = screen([node(1, digest: "aaaa", at: 90), node(2, digest: "bbbb", at: 100), node(3, digest: "bbbb", at: 100)])
        #expect(!apart.contains("DIFFERS"), "\(apart)")
        let differ = screen([node(1, digest: "aaaa", at: 100), node(2, digest: "bbbb", at: 100), node(3, digest: "bbbb", at: 100)])
        #expect(differ.components(separatedBy: "DIFFERS at this seq").count == 4, "\(differ)")
    }

    /// `flowkit cluster` piped, under load: 20 entry lines a second, then how many more there were.
    @Test func theClustersLineViewPrintsAtMostTwentyEntriesASecond() {
        var limit = EntryLineLimit(perSecond: 20)
        let start = ContinuousClock.now
        let first = limit.admit(Array(1...50), at: start)
        #expect(first.shown == Array(1...20) && first.summary == nil)
        let sameSecond = limit.admit(Array(51...60), at: start + .milliseconds(500))
        #expect(sameSecond.shown.isEmpty && sameSecond.summary == nil)
        let next = limit.admit(Array(61...62), at: start + .milliseconds(1_100))
        #expect(next.shown == [61, 62])
        #expect(next.summary == "… 40 more entries in that second (flowkit monitor prints every one)")
        var unlimited = EntryLineLimit(perSecond: nil)
        #expect(unlimited.admit(Array(1...100), at: start).shown.count == 100)
    }
}

/// A tmux server of the test's own (`-L socket`), one session `view` running a plain bash.
struct Tmux {
    let socket: String
    let runner: CommandRunner

    @discardableResult
    func run(_ arguments: [String]) async throws -> CommandResult {
        let result = try await runner.run("/usr/bin/tmux", ["-L", socket] + arguments, timeout: .seconds(10))
        guard result.exitCode == 0 else { throw HarnessError("tmux failed: \(result)") }
        return result
    }

    func start(width: Int, height: Int) async throws {
        try await run(["-f", "/dev/null", "new-session", "-d", "-s", "view", "-x", "\(width)", "-y", "\(height)", "env PS1='$ ' bash --norc --noprofile"])
    }

    /// Types a line and presses Enter.
    func type(_ line: String) async throws {
        try await run(["send-keys", "-t", "view", "-l", line])
        try await run(["send-keys", "-t", "view", "Enter"])
    }

    func keys(_ keys: String) async throws {
        try await run(["send-keys", "-t", "view", keys])
    }

    /// What the pane shows now.
    func capture() async throws -> String {
        try await run(["capture-pane", "-p", "-t", "view"]).stdout
    }

    /// A tmux format about the pane (`#{alternate_on}`).
    func format(_ format: String) async throws -> String {
        try await run(["display-message", "-p", "-t", "view", format]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
