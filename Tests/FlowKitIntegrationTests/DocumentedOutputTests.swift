@testable import FlowKitCluster
import FlowKitCommands
import Foundation
import Testing

/// What scripts read is documented, and the documents say what the binary does.
@Suite struct DocumentedOutputTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The fields docs/DASHBOARD.md lists for `flowkit status --json`, as paths (`nodes[].lag`).
    static func documentedStatusFields() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("docs/DASHBOARD.md"), encoding: .utf8)
        guard let start = text.range(of: "## `flowkit status --json`") else { throw HarnessError("docs/DASHBOARD.md has no status --json section") }
        let section = text[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var fields: Set<String> = []
        for line in section[..<end].split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(3).prefix { $0 != "`" }
            fields.insert(String(cell))
        }
        return fields
    }

    /// Every key path of a JSON value: objects' keys joined by `.`, arrays as `[]`.
    static func paths(of value: Any, prefix: String = "") -> Set<String> {
        var found: Set<String> = []
        if let object = value as? [String: Any] {
            for (key, child) in object {
                let path = prefix.isEmpty ? key : prefix + "." + key
                found.insert(path)
                found.formUnion(paths(of: child, prefix: path))
            }
        } else if let array = value as? [Any] {
            for child in array { found.formUnion(paths(of: child, prefix: prefix + "[]")) }
        }
        return found
    }

    /// A status with every field there is (replicated, a standby that fetched), as `status --json`
    /// prints it, has exactly the documented fields.
    @Test func everyFieldOfStatusJSONIsDocumented() throws {
        var status = ClusterStatus(
            epoch: 2, head: 10, firstSeq: 1, entriesPerSecond: 5,
            nodes: [.init(id: 1, name: "node-1", clientEndpoint: "tcp://127.0.0.1:7411", applied: 9, lag: 1, alive: true, lastSeenMillis: 200,
                          digest: String(repeating: "0", count: 32), instances: 3, runningEffects: 1, pendingSubmissions: 0, digestSeq: 9)],
            divergences: 0, quarantined: 0
        )
        status.nodes[0].unreadable = UnreadableEntry(seq: 10, flow: "counter", version: 1, reads: 3, readsFrom: 2, inSnapshot: true)
        status.nodes[0].instancesAtRest = 2
        status.nodes[0].instancesUnhashed = 0
        status.nodes[0].flowVersions = ["counter": 2]
        status.versions = ["counter": .init(agreed: 1, newest: 2, behind: ["node-2"])]
        status.replication = ReplicationStatus(
            leader: "c1", leaderSince: 1, written: 10, minInSync: 2,
            coordinators: [.init(id: "c1", role: "leader", inSync: true, durable: 10, lag: 0, lastFetchMillis: nil),
                           .init(id: "c2", role: "standby", inSync: true, durable: 10, lag: 0, lastFetchMillis: 12)]
        )
        let data = try JSONEncoder().encode(StatusOutput(status: status, problems: ["none, really"]))
        // Keyed by flow name: `versions.<flow>.agreed`, and `flowVersions` one field.
        let printed = Set(
            Self.paths(of: try JSONSerialization.jsonObject(with: data)).filter { !$0.hasPrefix("nodes[].flowVersions.") }
                .map { $0.replacingOccurrences(of: "versions.counter", with: "versions.<flow>") }
        )
        let documented = try Self.documentedStatusFields()
        #expect(printed.subtracting(documented).isEmpty, "printed, not documented: \(printed.subtracting(documented).sorted())")
        #expect(documented.subtracting(printed).isEmpty, "documented, not printed: \(documented.subtracting(printed).sorted())")
    }

    /// `flowkit flows` lists exactly the registered flows, and every event it shows is one the
    /// cluster takes for that flow.
    @Test func theFlowsListedAreTheRegistrysAndTheirEventsAreTaken() throws {
        let registry = FlowKitCLI.builtInRegistry
        let listed = registry.descriptions
        #expect(listed.map(\.name) == registry.names)
        for flow in listed {
            #expect(!flow.events.isEmpty, "\(flow.name) lists no events")
            let registered = try #require(registry.flow(named: flow.name))
            for event in flow.events {
                #expect(throws: Never.self, "\(flow.name): \(event)") { _ = try registered.normalise(Array(event.utf8), codec: .json) }
            }
            #expect((try? JSONSerialization.jsonObject(with: Data(flow.initialState.utf8))) != nil, "\(flow.name)'s state: \(flow.initialState)")
        }
    }
}
