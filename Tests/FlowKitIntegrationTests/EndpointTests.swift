import FlowKitCluster
import Foundation
import Testing

extension ClusterProcessTests {
    /// A coordinator bound to `ipc://` endpoints, which have no ports: a node given all three
    /// (`--coordinator`, `--coordinator-publish`, `--coordinator-sync`) reaches it. The next two
    /// ports after the submit endpoint's are a convention only for what is not given.
    @Test func aNodeReachesACoordinatorOnIpcEndpoints() async throws {
        let directory = NSTemporaryDirectory() + "flowkit-ipc-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = TestCluster.Options()
        // Given after the harness's own tcp:// endpoints, so these win.
        options.coordinatorArguments = ["--submit", "ipc://\(directory)/submit", "--publish", "ipc://\(directory)/publish", "--sync", "ipc://\(directory)/sync"]
        try await TestCluster.run(nodes: 2, options: options) { cluster in
            #expect(cluster.coordinatorEndpoints?.submit.hasPrefix("ipc://") == true)
            let emitted = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/over-ipc", wait: .applied)
            let statuses = try await cluster.waitUntilConverged()
            #expect(statuses[2]!.applied >= emitted.seq, "node 2 applied what node 1 emitted over ipc://")
        }
    }
}
