import Foundation
import Testing

extension ReliabilityTests {
    /// The CI chaos run: 50 s of ledger load with 10 faults (two of each kind: node kill -9 and
    /// restart, a node killed and left down past the lease, coordinator kill -9 and restart, node
    /// SIGSTOP/SIGCONT, dropped connections). Every
    /// acknowledged id must end up exactly once on every node, no id twice, equal digests; a timer
    /// started at each node ticks through it all, each tick from its owner at the time, and a node
    /// kill moves at least one (a restarted process owns nothing of its predecessor's).
    @Test func chaosRunLosesNothingAcknowledgedAndAppliesNothingTwice() async throws {
        let result = try await Reliability.flowkit(
            ["chaos", "--duration", "50", "--faults", "10", "--seed", "11", "--json", "--quiet"], timeout: .seconds(240)
        )
        #expect(result.status == 0, "flowkit chaos failed:\n\(result.stderr.suffix(4_000))")
        let report = try ReliabilityReport.decode(result.stdout)
        for check in report.checks { #expect(check.held, "\(check.name): \(check.detail)") }
        #expect(report.audit.lost == 0 && report.audit.duplicated == 0)
        #expect(report.audit.acknowledged > 1_000, "the load ran: \(report.audit.acknowledged) acknowledged")
        #expect(report.timers?.timers == 3 && (report.timers?.ticks ?? 0) > 60, "timers: \(String(describing: report.timers))")
        #expect((report.timers?.takeovers ?? 0) >= 1 && (report.effectsTakenOver ?? 0) >= 1, "a node kill moved a timer")
        // A timer whose node was left down ticked again at a survivor (how soon: docs/RELIABILITY.md).
        let resumed = (report.timers?.resumes ?? []).filter { $0.fault == "node-down" }.compactMap(\.secondsFromFault)
        #expect(!resumed.isEmpty, "no timer resumed after a node-down")
        let kinds = Dictionary(uniqueKeysWithValues: (report.summary ?? []).map { ($0.kind, $0.count) })
        for kind in ["node-kill", "node-down", "coordinator-kill", "node-pause", "connection-drop"] {
            #expect(kinds[kind] == 2, "\(kind) injected \(kinds[kind] ?? 0) times")
        }
    }

    /// The same across network namespaces: partitions (a node's link taken down) and a slow,
    /// lossy link, besides node kills. Needs root and `ip netns`.
    @Test(.enabled(if: Reliability.canUseNetworkNamespaces, "needs root and ip netns"))
    func chaosWithPartitionsLosesNothingAcknowledged() async throws {
        let result = try await Reliability.flowkit(
            ["chaos", "--partitions", "--kinds", "partition,slow-link,node-kill", "--duration", "30", "--faults", "6", "--seed", "5", "--json", "--quiet"],
            timeout: .seconds(240)
        )
        #expect(result.status == 0, "flowkit chaos --partitions failed:\n\(result.stderr.suffix(4_000))")
        let report = try ReliabilityReport.decode(result.stdout)
        for check in report.checks { #expect(check.held, "\(check.name): \(check.detail)") }
        let kinds = Set((report.summary ?? []).map(\.kind))
        #expect(kinds == ["partition", "slow-link", "node-kill"])
        // The run's namespaces are gone.
        let namespaces = try await Reliability.run("/usr/sbin/ip", ["netns", "list"], timeout: .seconds(10))
        #expect(!namespaces.stdout.contains("-hub"), "namespaces left behind: \(namespaces.stdout)")
    }

    /// A seed replays the same faults: the plan is a function of the seed alone.
    @Test func chaosSeedReplaysTheSameFaults() async throws {
        var plans: [[String]] = []
        for _ in 0..<2 {
            let result = try await Reliability.flowkit(
                ["chaos", "--duration", "8", "--faults", "3", "--seed", "99", "--json", "--quiet", "--rate", "50"], timeout: .seconds(120)
            )
            #expect(result.status == 0, "\(result.stderr.suffix(2_000))")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }).map { Array($0.utf8) } ?? [])) as? [String: Any]
            let faults = (json?["faults"] as? [[String: Any]]) ?? []
            plans.append(faults.map { "\($0["kind"] ?? "") \($0["target"] ?? "")" })
        }
        #expect(plans[0].count == 3)
        #expect(plans[0] == plans[1])
    }
}
