import FlowKitCluster
import Foundation
import Logging

/// The short workload `flowkit cluster` runs first: each step says what it shows.
package struct DemoWorkload {
    package let file: LocalClusterFile
    package let logger: Logger

    package func run() async throws {
        var clients: [ClusterClient] = []
        for node in file.nodes {
            let (transport, serverKey) = try CurveClientOptions.resolve(localCluster: file) { $0.curve?.nodePublicKeys[node.name] }
            clients.append(
                try await ClusterClient(
                    endpoint: node.clientEndpoint, timeout: .seconds(10), transport: transport,
                    serverPublicKey: serverKey, logger: logger
                )
            )
        }
        do {
            try await steps(clients)
        } catch {
            for client in clients { await client.close() }
            throw error
        }
        for client in clients { await client.close() }
    }

    private func steps(_ clients: [ClusterClient]) async throws {
        func client(_ index: Int) -> ClusterClient { clients[index % clients.count] }
        func name(_ index: Int) -> String { file.nodes[index % file.nodes.count].name }

        say("demo: increments of counter/demo emitted at every node, ordered by the coordinator")
        var last: UInt64 = 0
        for index in 0..<6 {
            last = try await client(index).emit(json: #"{"increment":{}}"#, to: "counter/demo", wait: .applied).seq
        }
        for index in clients.indices {
            let state = try await client(index).query("counter/demo", minApplied: last)
            say("  \(name(index)) sees \(String(decoding: state.json, as: UTF8.self)), digest \(state.digest)")
        }

        say("demo: a timer started at \(name(0)) ticks through the order; every node counts the ticks")
        _ = try await client(0).emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: "timer/demo", wait: .applied)
        try await Task.sleep(for: .milliseconds(2_300))
        let ticking = try await client(clients.count - 1).query("timer/demo")
        say("  \(name(clients.count - 1)) sees \(String(decoding: ticking.json, as: UTF8.self))")
        let stop = try await client(clients.count - 1).cancel(at: "timer/demo", id: "timer", wait: .applied)
        say("  cancelled from \(name(clients.count - 1)) at seq \(stop.seq): the timer running on \(name(0)) stops")

        say("demo: a search typed at \(name(0)) and corrected at \(name(1)); the second cancels the first in flight")
        _ = try await client(0).emit(json: #"{"searchTextChanged":{"_0":"ma"}}"#, to: "search/films")
        let corrected = try await client(1).emit(json: #"{"searchTextChanged":{"_0":"mat"}}"#, to: "search/films")
        try await Task.sleep(for: .milliseconds(600))
        let search = try await client(2).query("search/films", minApplied: corrected.seq)
        say("  \(name(2)) sees \(String(decoding: search.json, as: UTF8.self))")
        say("demo done; the live view follows (entries, nodes, alarms)")
    }

    private func say(_ line: String) { printFlushed(line) }
}
