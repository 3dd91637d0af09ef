import FlowKitCluster
import FlowKitExamples
import FlowKitTools
import Foundation

extension TestCluster {
    /// Runs `body` with a client of its own for every node, with `timeout` per request (the
    /// harness's clients wait 15 s), and closes them on every path.
    func withClients<T>(timeout: Duration, _ body: ([Int: ClusterClient]) async throws -> T) async throws -> T {
        var clients: [Int: ClusterClient] = [:]
        func closeAll() async { for client in clients.values { await client.close() } }
        do {
            for id in nodeIDs {
                guard let endpoint = node(id)?.clientEndpoint else { continue }
                clients[id] = try await ClusterClient(endpoint: endpoint, timeout: timeout, logger: logger)
            }
            let result = try await body(clients)
            await closeAll()
            return result
        } catch {
            await closeAll()
            throw error
        }
    }

    /// Waits until every node has applied the same seq, equal to the head it knows, with nothing
    /// left to submit, and reports the same combined digest: the cluster is quiet and converged.
    ///
    /// - Returns: Each node's status at that point.
    @discardableResult
    func waitUntilConverged(timeout: Duration = .seconds(30)) async throws -> [Int: NodeStatus] {
        var last: [Int: NodeStatus] = [:]
        do {
            return try await eventually("every node applied the same head with the same digest", timeout: timeout, every: .milliseconds(200)) {
                var statuses: [Int: NodeStatus] = [:]
                for id in nodeIDs { statuses[id] = try await client(id).status() }
                last = statuses
                let values = Array(statuses.values)
                let quiet = values.allSatisfy { $0.applied == $0.knownHead && $0.pendingSubmissions == 0 && $0.connected }
                let same = Set(values.map(\.applied)).count == 1 && Set(values.map(\.digest)).count == 1
                return quiet && same ? statuses : nil
            }
        } catch {
            let described = last.sorted { $0.key < $1.key }.map {
                "node \($0.key): applied \($0.value.applied) knownHead \($0.value.knownHead) pending \($0.value.pendingSubmissions) digest \($0.value.digest)"
            }
            throw HarnessError("\(error)\n" + described.joined(separator: "\n"))
        }
    }

    /// Every node's ledgers (address → ids), read once the node has applied `head`.
    func ledgers(_ addresses: [String], head: UInt64) async throws -> [Int: [String: [String]]] {
        var result: [Int: [String: [String]]] = [:]
        for id in nodeIDs {
            for address in addresses {
                do {
                    let state = try await client(id).query(address, minApplied: head)
                    result[id, default: [:]][address] = try state.decode(LedgerFlow.State.self).ids
                } catch let error as ProtocolError where error.code == .notFound {
                    result[id, default: [:]][address] = []
                }
            }
        }
        return result
    }
}
