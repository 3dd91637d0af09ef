import Foundation

/// What `flowkit fuzz` sent each socket, what came back, what the processes counted, and what
/// held: tables, or JSON with `--json`.
struct FuzzReport: CheckedReport, Codable {
    struct Phase: Sendable, Codable {
        var target: FuzzTarget
        var process: String
        var tally: FuzzDriver.Tally
        /// `flowkit_rejected_total` of the receiving process, after minus before, by reason.
        var rejectedDelta: [String: Int]
        /// `flowkit_refused_total` (submissions refused inside a valid message), after minus before.
        var refusedDelta: [String: Int]
        /// Reasons where the ERROR replies received and the rejections counted differ.
        var mismatches: [String]
        /// Valid emits acknowledged while this socket was being fuzzed.
        var acknowledgedDuring: Int
        /// RSS of every process: at the start of the phase, the highest during it, after it.
        var memory: [String: ProcessMemory.Samples]
    }

    struct Check: Sendable, Codable {
        var name: String
        var held: Bool
        var detail: String
    }

    var seed: UInt64
    var messagesPerTarget: Int
    var phases: [Phase]
    /// The same submissions at a node and at the coordinator.
    var walls: WallAgreement.Result?
    var subscriptionProbe: LongSubscriptionProbe.Result?
    var memory: [String: ProcessMemory.Samples]
    var audit: LedgerAudit.Result
    var finalHead: UInt64
    var alarms: [String: Int]
    /// Nodes the coordinator lists in its status at the end (the cluster has 3).
    var membersListed: Int?
    var crashes: [String]
    var checks: [Check]
    var directory: String?

    var passed: Bool { checks.allSatisfy(\.held) }

    var text: String {
        var lines: [String] = ["fuzz run: seed \(seed), \(messagesPerTarget) messages per socket", ""]
        lines.append(row("socket", "sent", "ERROR", "other", "no answer", "valid load", "seconds"))
        for phase in phases {
            let other = phase.tally.otherReplies.values.reduce(0, +)
            lines.append(row(
                phase.target.rawValue, "\(phase.tally.sent)", phase.target.answers ? "\(phase.tally.totalErrorReplies)" : "—",
                phase.target.answers ? "\(other)" : "\(phase.tally.published) pub", phase.target == .nodeReq ? "\(phase.tally.unanswered)" : "—",
                "\(phase.acknowledgedDuring) ok", String(format: "%.1f", phase.tally.seconds)
            ))
        }
        lines.append("")
        lines.append(row("socket / reason", "ERROR replies", "counted (metrics)", "", "", "", ""))
        for phase in phases where phase.target.answers {
            let reasons = Set(phase.tally.errorReplies.keys).union(phase.rejectedDelta.keys).sorted()
            for reason in reasons {
                lines.append(row("\(phase.target.rawValue) \(reason)", "\(phase.tally.errorReplies[reason, default: 0])", "\(phase.rejectedDelta[reason, default: 0])", "", "", "", ""))
            }
            if !phase.refusedDelta.isEmpty {
                lines.append("  \(phase.target.rawValue): submissions refused inside valid messages (ACK status 2): "
                    + phase.refusedDelta.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            if !phase.tally.otherReplies.isEmpty {
                lines.append("  \(phase.target.rawValue): other answers: " + phase.tally.otherReplies.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
        }
        if let walls {
            lines.append("")
            lines.append("both walls: \(walls.cases) submissions (\(walls.comparedAtBothWalls) sent to node-1 and the coordinator, \(walls.coordinatorOnly) only a SUBMIT carries): "
                + "\(walls.admitted) admitted by both, refused alike " + walls.refusedByReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                + "; \(walls.inconclusive) undecided; \(walls.disagreements.count) disagreements")
            for disagreement in walls.disagreements.prefix(20) { lines.append("  DISAGREE: \(disagreement)") }
        }
        lines.append("")
        lines.append("memory (RSS before → peak → after the fuzzing): " + memory.sorted { $0.key < $1.key }.map {
            "\($0.key) \(ProcessMemory.mebibytes($0.value.first)) → \(ProcessMemory.mebibytes($0.value.peak)) → \(ProcessMemory.mebibytes($0.value.last))"
        }.joined(separator: "; "))
        if let membersListed { lines.append("nodes the coordinator lists in its status at the end: \(membersListed) (the cluster has 3)") }
        lines.append("ledger: \(audit.acknowledged) acknowledged ids, lost \(audit.lost), duplicated \(audit.duplicated); alarms: \(alarms.isEmpty ? "none" : alarms.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        lines.append("")
        lines.append(row("check", "held", "detail", "", "", "", ""))
        for check in checks { lines.append(row(check.name, check.held ? "yes" : "NO", check.detail, "", "", "", "")) }
        lines.append("")
        lines.append(passed ? "every check held" : "CHECKS FAILED" + (directory.map { "; logs kept in \($0)" } ?? ""))
        return lines.joined(separator: "\n")
    }

    private func row(_ columns: String...) -> String {
        let widths = [46, 14, 18, 12, 10, 12, 8]
        let trimmed = Array(columns.reversed().drop { $0.isEmpty }.reversed())
        return trimmed.enumerated().map { index, column in
            index == trimmed.count - 1 ? column : column.padding(toLength: max(widths[index], column.count + 1), withPad: " ", startingAt: 0)
        }.joined()
    }
}
