import Foundation

/// What a chaos run did and what held: printed as tables, or as JSON with `--json`.
struct ChaosReport: CheckedReport, Codable {
    struct KindSummary: Sendable, Codable {
        var kind: FaultKind
        var count: Int
        /// Seconds from heal to caught up, over the faults of this kind that converged.
        var convergeMean: Double?
        var convergeMax: Double?
        var notConverged: Int
        var errors: Int
    }

    struct Load: Sendable, Codable {
        var attempted: Int
        var acknowledged: Int
        /// Failed emits by reason (`timed_out`, `coordinator_unavailable`, …): allowed during faults.
        var failed: [String: Int]
        var acknowledgedPerSecond: Double
    }

    struct Check: Sendable, Codable {
        var name: String
        var held: Bool
        var detail: String
    }

    var seed: UInt64
    var nodes: Int
    var seconds: Double
    var partitions: Bool
    var faults: [FaultRecord]
    var summary: [KindSummary]
    var load: Load
    var audit: LedgerAudit.Result
    var finalHead: UInt64
    /// Seconds from the end of the load until every node was idle with equal digests.
    var finalConvergeSeconds: Double?
    var memory: [String: ProcessMemory.Samples]
    var crashes: [String]
    var alarms: [String: Int]
    /// The timers that ran through the run: their ticks' owners, and whether they tick at the end.
    var timers: ChaosTimers.Result
    /// Instances whose effects moved off nodes that went down, and effects' submissions the
    /// coordinator refused as stale (their instance had been taken over).
    var effectsTakenOver: Int
    var staleSubmissionsRefused: Int
    var checks: [Check]
    var directory: String?

    var passed: Bool { checks.allSatisfy(\.held) }

    static func summarize(_ faults: [FaultRecord]) -> [KindSummary] {
        Dictionary(grouping: faults, by: \.kind).sorted { $0.key < $1.key }.map { kind, records in
            let times = records.compactMap(\.convergeSeconds)
            return KindSummary(
                kind: kind,
                count: records.count,
                convergeMean: times.isEmpty ? nil : times.reduce(0, +) / Double(times.count),
                convergeMax: times.max(),
                notConverged: records.count - times.count,
                errors: records.filter { $0.error != nil }.count
            )
        }
    }

    /// The tables a person reads.
    var text: String {
        var lines: [String] = []
        lines.append("chaos run: seed \(seed), \(nodes) nodes, \(String(format: "%.0f", seconds)) s\(partitions ? ", network namespaces" : ", loopback")")
        lines.append("")
        lines.append(row("fault", "count", "converge mean", "converge max", "not converged"))
        for kind in summary {
            lines.append(row(kind.kind.rawValue, "\(kind.count)", Self.seconds(kind.convergeMean), Self.seconds(kind.convergeMax), "\(kind.notConverged)"))
        }
        lines.append("")
        lines.append(
            "load: \(load.attempted) emits, \(load.acknowledged) acknowledged (\(String(format: "%.0f", load.acknowledgedPerSecond))/s), "
                + "failed \(load.failed.isEmpty ? "none" : load.failed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
        )
        lines.append(
            "ledger: \(audit.acknowledged) acknowledged ids, lost \(audit.lost), duplicated \(audit.duplicated), misplaced \(audit.misplaced); "
                + "\(audit.orderedWithoutAcknowledgement) ordered without an acknowledgement; log checked from seq \(audit.logFirstSeq) (\(audit.logEntries) entries)"
        )
        lines.append(
            "effects: \(timers.timers) timers, \(timers.ticks) ticks ordered, \(timers.takeovers) takeover entries of them in the log; "
                + "\(effectsTakenOver) instance(s) taken over, \(staleSubmissionsRefused) stale submission(s) refused"
        )
        for (kind, resumes) in Dictionary(grouping: timers.resumes, by: { $0.fault?.rawValue ?? "no fault" }).sorted(by: { $0.key < $1.key }) {
            lines.append(
                "  taken over after \(kind): \(resumes.count); the new owner's first tick "
                    + Self.spread(resumes.compactMap(\.secondsFromFault)) + " after the fault, the timer silent " + Self.spread(resumes.compactMap(\.silentSeconds))
            )
        }
        lines.append(
            "memory (RSS first → peak → last): "
                + memory.sorted { $0.key < $1.key }.map {
                    "\($0.key) \(ProcessMemory.mebibytes($0.value.first)) → \(ProcessMemory.mebibytes($0.value.peak)) → \(ProcessMemory.mebibytes($0.value.last))"
                }.joined(separator: "; ")
        )
        lines.append("")
        lines.append(row("invariant", "held", "detail"))
        for check in checks { lines.append(row(check.name, check.held ? "yes" : "NO", check.detail)) }
        for problem in (audit.problems + timers.problems).prefix(10) { lines.append("  problem: \(problem)") }
        lines.append("")
        lines.append(passed ? "every invariant held" : "INVARIANTS FAILED" + (directory.map { "; logs kept in \($0)" } ?? ""))
        return lines.joined(separator: "\n")
    }

    private func row(_ columns: String...) -> String {
        let widths = [48, 8, 15, 14, 14]
        return columns.enumerated().map { index, column in
            index == columns.count - 1 ? column : column.padding(toLength: max(widths[index], column.count + 1), withPad: " ", startingAt: 0)
        }.joined()
    }

    /// `median 3.91 s, max 4.20 s`, or `—` for none.
    static func spread(_ values: [Double]) -> String {
        guard !values.isEmpty else { return "—" }
        let sorted = values.sorted()
        return "median \(seconds(sorted[sorted.count / 2])), max \(seconds(sorted.last))"
    }

    static func seconds(_ value: Double?) -> String {
        value.map { String(format: "%.2f s", $0) } ?? "—"
    }
}
