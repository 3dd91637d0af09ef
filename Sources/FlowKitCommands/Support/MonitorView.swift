@_spi(Wire) import FlowKitCluster
import Foundation

/// What the live views of `flowkit cluster` and `flowkit monitor` show, built from monitor events.
package struct MonitorView {
    private(set) var status: ClusterStatus?
    private(set) var recent: [Entry] = []
    private(set) var alarms: [(time: Date, alarm: Alarm)] = []
    private(set) var head: UInt64 = 0
    private(set) var entriesSeen = 0
    private(set) var fellBehind = 0
    package var maxRecent = 100
    package var nodeNames: [UInt32: String] = [:]
    /// Entries per second from the last statuses, oldest first, for the screen's sparkline.
    private(set) var rates: [Double] = []
    /// What the supervisor of a local cluster did (a node restarted), latest last.
    private(set) var supervisorNotes: [(time: Date, text: String)] = []

    package init() {}

    /// Notes what `flowkit cluster`'s supervisor did, for the screen.
    package mutating func note(supervisor text: String) {
        supervisorNotes.append((Date(), text))
        if supervisorNotes.count > 5 { supervisorNotes.removeFirst() }
    }

    package mutating func apply(_ event: ClusterMonitor.Event) {
        switch event {
        case .entries(let entries):
            entriesSeen += entries.count
            recent.append(contentsOf: entries)
            if recent.count > maxRecent { recent.removeFirst(recent.count - maxRecent) }
            head = max(head, entries.last?.seq ?? 0)
        case .heartbeat(let heartbeat):
            head = max(head, heartbeat.head)
        case .status(let status):
            self.status = status
            head = max(head, status.head)
            rates.append(status.entriesPerSecond)
            if rates.count > 60 { rates.removeFirst(rates.count - 60) }
            for node in status.nodes { nodeNames[node.id] = node.name }
        case .alarm(let alarm):
            alarms.append((Date(), alarm))
            if alarms.count > 5 { alarms.removeFirst() }
        case .fellBehind:
            fellBehind += 1
        }
    }

    /// The whole screen, for a terminal of `rows` and `columns`: the head and rate, each node
    /// with a bar for its lag, the coordinators, the alarms, and as many of the latest entries as
    /// fit below.
    package func screen(title: String, rows: Int, columns: Int) -> [String] {
        var top: [String] = []
        let rate = status.map { String(format: "%.0f", $0.entriesPerSecond) } ?? "-"
        top.append(title)
        top.append(
            "head \(head)   \(rate) entries/s \(Self.sparkline(rates.suffix(max(0, min(30, columns - 60)))))   epoch \(status?.epoch ?? 0)   divergences \(status?.divergences ?? 0)"
                + "   takeovers \(status?.takeovers ?? 0)"
        )
        top.append("")
        let nodes = status?.nodes ?? []
        let maxLag = max(1, nodes.map(\.lag).max() ?? 0)
        top.append(pad("node", 10) + pad("applied", 10) + pad("lag", 22) + pad("state", 9) + pad("instances", 11) + pad("effects", 9) + pad("owns", 7) + "digest")
        // Digests compare only at the same seq: a node behind holds an earlier state. A digestSeq
        // of 0 is a busy node's digest still being brought up to date: it describes no one seq.
        var digestsAt: [UInt64: Set<String>] = [:]
        for node in nodes where node.alive && node.digestSeq > 0 { digestsAt[node.digestSeq, default: []].insert(node.digest) }
        for node in nodes {
            let state = !node.alive ? "DOWN" : node.unreadable != nil ? "UPGRADE" : node.stalled ? "STALLED" : "alive"
            let differs = node.alive && node.digestSeq > 0 && (digestsAt[node.digestSeq]?.count ?? 0) > 1
            let digest = String(node.digest.prefix(16)) + (differs ? "  DIFFERS at this seq" : node.digestSeq == 0 ? "  (being hashed)" : "")
            top.append(
                pad(node.name, 10) + pad("\(node.applied)", 10) + pad(pad("\(node.lag)", 7) + Self.bar(node.lag, of: maxLag, width: 14), 22)
                    + pad(state, 9) + pad("\(node.instances)", 11) + pad("\(node.runningEffects)", 9) + pad("\(node.ownedInstances ?? 0)", 7) + digest
            )
        }
        if let replication = status?.replication {
            top.append("")
            top.append(contentsOf: Self.describe(replication, now: Date()))
        }
        if let versions = status?.versions {
            top.append("")
            top.append(contentsOf: Self.describe(versions))
        }
        if !alarms.isEmpty {
            top.append("")
            top.append("ALARMS:")
            for (time, alarm) in alarms.reversed() {
                top.append("  \(Self.clock(time)) \(alarm.kind.rawValue.uppercased()): \(alarm.message)")
            }
        }
        if !supervisorNotes.isEmpty {
            top.append("")
            top.append("SUPERVISOR:")
            for (time, text) in supervisorNotes.reversed() { top.append("  \(Self.clock(time)) \(text)") }
        }
        var footer = ["q quits"]
        if fellBehind > 0 { footer.insert("(this view fell behind \(fellBehind) time(s) and skipped entries)", at: 0) }
        top.append("")
        top.append("latest entries:")
        let room = max(0, rows - top.count - footer.count)
        let latest = recent.suffix(room).reversed().map { "  " + describe($0) }
        return top + latest + Array(repeating: "", count: max(0, room - latest.count)) + footer
    }

    /// `value` of `total` as a bar `width` wide; anything above zero shows.
    package static func bar(_ value: UInt64, of total: UInt64, width: Int) -> String {
        let filled = value == 0 ? 0 : max(1, min(width, Int(Double(value) / Double(max(total, 1)) * Double(width))))
        return String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
    }

    /// Values as a line of eighth-blocks, scaled to the largest.
    package static func sparkline<Values: Collection<Double>>(_ values: Values) -> String {
        let blocks = Array("▁▂▃▄▅▆▇█")
        let top = values.max() ?? 0
        guard top > 0 else { return String(repeating: blocks[0], count: values.count) }
        return String(values.map { blocks[min(7, Int($0 / top * 7.999))] })
    }

    /// One entry on one line.
    package func describe(_ entry: Entry) -> String {
        // The session tells a restarted node's entries from its previous process's.
        let origin = entry.origin == 0
            ? "the coordinator"
            : (nodeNames[entry.origin] ?? "node-\(entry.origin)") + " session " + Self.shortSession(entry.session)
        let what: String
        switch entry.kind {
        case .event:
            what = entry.codec == .json
                ? String(decoding: entry.payload, as: UTF8.self)
                : "binary " + entry.payload.prefix(16).map { String(format: "%02x", $0) }.joined()
        case .cancel:
            what = "CANCEL id \((try? CancelTarget(codec: entry.codec, payload: entry.payload))?.description ?? "(unreadable)")"
        case .cancelAll:
            what = "CANCEL every effect"
        case .quarantined:
            what = "QUARANTINED: too large for any message, skipped by every replica"
        case .takeover:
            if let takeover = try? Takeover(payload: entry.payload) {
                what = "TAKEOVER effects of \(name(of: takeover.from)) → \(name(of: takeover.to))"
            } else {
                what = "TAKEOVER (unreadable)"
            }
        }
        return "seq \(entry.seq)  \(entry.address)  \(what.prefix(80))  (from \(origin))"
    }

    /// A process by its node's name and its session.
    private func name(of owner: EffectOwner) -> String {
        (nodeNames[owner.node] ?? "node-\(owner.node)") + " session " + Self.shortSession(owner.session)
    }

    /// A session's first 8 hex digits: enough to tell a node's processes apart.
    package static func shortSession(_ session: UInt64) -> String {
        String(String(session, radix: 16).prefix(8))
    }

    /// A line for line-oriented output, or `nil` for events it does not print.
    package func line(for event: ClusterMonitor.Event) -> [String] {
        switch event {
        case .entries(let entries):
            return entries.map { describe($0) }
        case .status(let status):
            var lines: [String] = []
            if let replication = status.replication, replication.leader != self.status?.replication?.leader || status.epoch != self.status?.epoch {
                if let previous = self.status {
                    let before = previous.replication.map { " (was \($0.leader), epoch \(previous.epoch))" } ?? ""
                    lines.append("election: \(replication.leader) leads in epoch \(status.epoch)\(before)")
                } else {
                    lines.append("leader: \(replication.leader) in epoch \(status.epoch)")
                }
            }
            let nodes = status.nodes.map { "\($0.name) applied=\($0.applied) lag=\($0.lag) \($0.alive ? ($0.stalled ? "STALLED" : "alive") : "DOWN")" }
            let coordinators = status.replication.map { replication in
                " leader=\(replication.leader) in-sync=\(replication.coordinators.filter(\.inSync).count)/\(replication.coordinators.count) "
                    + replication.coordinators.filter { $0.role == "standby" }.map { "\($0.id) lag=\($0.lag)" }.joined(separator: " ") + ";"
            } ?? ""
            lines.append("status head=\(status.head) rate=\(Int(status.entriesPerSecond))/s\(coordinators) " + nodes.joined(separator: "; "))
            return lines
        case .alarm(let alarm):
            return ["ALARM \(alarm.kind.rawValue): \(alarm.message)"]
        case .fellBehind(let expected, let got):
            return ["fell behind: expected seq \(expected), got \(got); entries in between were dropped for this monitor"]
        case .heartbeat:
            return []
        }
    }

    /// An entry kind's name in JSON lines.
    private static func kindName(_ kind: EntryKind) -> String {
        switch kind {
        case .event: "event"
        case .cancel: "cancel"
        case .cancelAll: "cancelAll"
        case .quarantined: "quarantined"
        case .takeover: "takeover"
        }
    }

    /// JSON lines with stable field names.
    package static func json(for event: ClusterMonitor.Event) -> [String] {
        switch event {
        case .entries(let entries):
            return entries.map { entry in
                var object: [String: JSONValue] = [
                    "type": "entry", "seq": .int(entry.seq), "epoch": .int(entry.epoch), "address": .string(entry.address),
                    "origin": .int(entry.origin), "session": .string(String(entry.session, radix: 16)), "kind": .string(kindName(entry.kind)),
                    "codec": .string(entry.codec.description), "committedAt": .int(entry.committedAt),
                ]
                switch entry.kind {
                case .cancel:
                    switch try? CancelTarget(codec: entry.codec, payload: entry.payload) {
                    case .described(let text)?:
                        object["payload"] = .string(text)
                    case .typed(let type, let description)?:
                        object["payload"] = .string(description)
                        object["cancelIDType"] = .string(type)
                    case nil:
                        object["payload"] = .string(String(decoding: entry.payload, as: UTF8.self))
                    }
                case .takeover:
                    if let takeover = try? Takeover(payload: entry.payload) {
                        object["from"] = .object(["node": .int(takeover.from.node), "session": .string(String(takeover.from.session, radix: 16))])
                        object["to"] = .object(["node": .int(takeover.to.node), "session": .string(String(takeover.to.session, radix: 16))])
                    }
                case .event where entry.codec == .json:
                    object["payload"] = (try? JSONValue(parsing: entry.payload)) ?? .string(String(decoding: entry.payload, as: UTF8.self))
                default:
                    object["payload"] = .string(String(decoding: entry.payload, as: UTF8.self))
                }
                return JSONValue.object(object).text()
            }
        case .status(let status):
            return [line(["type": "status", "status": (try? JSONValue(encoding: status)) ?? .null])]
        case .alarm(let alarm):
            return [line(["type": "alarm", "alarm": (try? JSONValue(encoding: alarm)) ?? .null])]
        case .fellBehind(let expected, let got):
            return [line(["type": "fellBehind", "expected": .int(expected), "got": .int(got)])]
        case .heartbeat(let heartbeat):
            return [line(["type": "heartbeat", "epoch": .int(heartbeat.epoch), "head": .int(heartbeat.head), "time": .int(heartbeat.time)])]
        }
    }

    /// One JSON line.
    private static func line(_ object: JSONValue) -> String { object.text() }

    /// Replicated coordinators: the leader, and each one's copy of the log.
    package static func describe(_ replication: ReplicationStatus, now: Date) -> [String] {
        let inSync = replication.coordinators.filter(\.inSync).count
        let since = Date(timeIntervalSince1970: Double(replication.leaderSince) / 1_000)
        var lines = [
            "coordinators: leader \(replication.leader) since \(clock(since)) (\(Int(max(0, now.timeIntervalSince(since)))) s)  written \(replication.written)  "
                + "\(inSync) of \(replication.coordinators.count) in sync (\(replication.minInSync) needed)"
        ]
        for coordinator in replication.coordinators {
            var line = "  " + pad(coordinator.id, 8) + pad(coordinator.role, 9) + pad(coordinator.inSync ? "in sync" : "OUT OF SYNC", 13)
                + "durable \(coordinator.durable)"
            if coordinator.role == "standby" {
                line += "  lag \(coordinator.lag)  " + (coordinator.lastFetchMillis.map { "fetched \($0) ms ago" } ?? "no fetch this term")
            }
            lines.append(line)
        }
        return lines
    }

    /// One line per flow written at a version above 1: the version the cluster orders and, during
    /// an upgrade, the nodes holding the newer one back.
    package static func describe(_ versions: [String: ClusterStatus.FlowVersions]) -> [String] {
        versions.sorted { $0.key < $1.key }.map { flow, versions in
            guard versions.newest > versions.agreed else { return "flow \(flow): version \(versions.agreed)" }
            return "flow \(flow): version \(versions.agreed) agreed, \(versions.newest) UPGRADING: waits for \(versions.behind.joined(separator: ", "))"
        }
    }

    private func pad(_ text: String, _ width: Int) -> String { Self.pad(text, width) }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    private static func clock(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: date)
    }
}

/// Whether standard output is a terminal: live views redraw there and print lines elsewhere.
package var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
