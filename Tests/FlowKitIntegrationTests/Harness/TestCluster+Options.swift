import Foundation
import Synchronization

extension TestCluster {
    /// What a test changes about the processes a ``TestCluster`` starts.
    ///
    /// ```swift
    /// var options = TestCluster.Options()
    /// options.binary = "flowkit-testbed"                      // the test-only flows too
    /// options.nodeArguments[3] = ["--subscriber-hwm", "5"]
    /// options.nodesWithDataDirectory = [2]                     // local snapshots for node 2
    /// try await TestCluster.run(nodes: 3, options: options) { cluster in … }
    /// ```
    struct Options: Sendable {
        /// The executable every process runs: `flowkit`, or `flowkit-testbed` (the same commands
        /// with the test-only flows, `nondeterministic` among them).
        var binary = "flowkit"
        /// Extra arguments for every start of the coordinator.
        var coordinatorArguments: [String] = []
        /// Extra arguments for node `id`, at every start of it.
        var nodeArguments: [Int: [String]] = [:]
        /// Extra arguments for every node.
        var allNodeArguments: [String] = []
        /// Nodes given a data directory of their own (`<test dir>/node-<id>-data`), kept across
        /// restarts: they save local snapshots and resume from them.
        var nodesWithDataDirectory: Set<Int> = []
        /// Serve every node's Prometheus metrics on a port the OS chooses
        /// (``NodeHandle/metricsEndpoint``).
        var nodeMetrics = false
        /// How many coordinators: above 1, replicated ones (`c1`, `c2`, …) electing their leader
        /// in an etcd the cluster starts; the nodes know them all.
        var coordinators = 1
        /// With replicated coordinators: etcd, every coordinator and every node each in a network
        /// namespace of its own on a private bridge (``TestCluster/lab``), so the test can cut
        /// links. Needs root and iproute2 (``NetworkNamespaces/available``).
        var networkLab = false
        /// Variables set for every start of the coordinator (`FLOWKIT_TESTBED_BUILD`, say).
        var coordinatorEnvironment: [String: String] = [:]
        /// Variables set for node `id`'s starts, until ``TestCluster/setEnvironment(_:ofNode:)``
        /// changes them.
        var nodeEnvironment: [Int: [String: String]] = [:]

        init() {}
    }

    /// The extra arguments node `id` gets from ``options``.
    func nodeArguments(_ id: Int) -> [String] {
        var arguments = options.allNodeArguments + options.nodeArguments[id, default: []]
        if options.nodesWithDataDirectory.contains(id) { arguments += ["--data-dir", nodeDataDirectory(id)] }
        if options.nodeMetrics { arguments += ["--metrics", "127.0.0.1:0"] }
        return arguments
    }

    /// Sets the variables node `id` gets at its next start: a node restarted as another build of
    /// the testbed, say.
    func setEnvironment(_ environment: [String: String], ofNode id: Int) {
        state.withLock { $0.nodeEnvironment[id] = environment }
    }

    /// Sets the variables coordinator `id` gets at its next start (`coordinator` when it runs
    /// alone, `c1`… replicated): a coordinator restarted as another build of the testbed, say.
    func setEnvironment(_ environment: [String: String], ofCoordinator id: String) {
        state.withLock { $0.coordinatorEnvironment[id] = environment }
    }

    func coordinatorEnvironment(of id: String) -> [String: String] {
        state.withLock { $0.coordinatorEnvironment[id] } ?? options.coordinatorEnvironment
    }

    /// Node `id`'s data directory, when ``Options/nodesWithDataDirectory`` names it.
    func nodeDataDirectory(_ id: Int) -> String { "\(directory)/node-\(id)-data" }
}
