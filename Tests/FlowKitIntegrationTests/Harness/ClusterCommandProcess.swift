#if canImport(Glibc)
import Glibc
#endif
import FlowKitProcesses
import Foundation
import Testing

/// A `flowkit cluster` process a test started, as a user runs it, and the `cluster.json` it wrote.
///
/// The test's own temporary directory holds the outputs; it is removed by ``finish(passed:)``
/// when the test passed, and kept (its path printed) otherwise.
final class ClusterCommandProcess: Sendable {
    /// What `cluster.json` says (the fields the tests use).
    struct File: Decodable, Sendable {
        struct Coordinator: Decodable, Sendable {
            var id: String?
            var submit: String
            var publish: String
            var sync: String
            var pid: Int32
        }
        struct Node: Decodable, Sendable {
            var id: UInt32
            var name: String
            var clientEndpoint: String
            var pid: Int32
        }
        var coordinator: Coordinator
        /// Replicated coordinators, and the etcd they elect their leader in.
        var coordinators: [Coordinator]?
        var etcdPid: Int32?
        var nodes: [Node]

        var pids: [Int32] { (coordinators ?? [coordinator]).map(\.pid) + [etcdPid].compactMap { $0 } + nodes.map(\.pid) }
    }

    let process: ChildProcess
    let binary: String
    /// The test's temporary directory.
    let directory: String
    /// The cluster's data directory (`--dir`, or `.flowkit/cluster` under the working directory).
    let clusterDirectory: String
    let runner: CommandRunner
    /// The coordinator's and nodes' pids in `cluster.json` once it was up.
    let childPids: [Int32]

    private init(process: ChildProcess, binary: String, directory: String, clusterDirectory: String, childPids: [Int32]) {
        self.process = process
        self.childPids = childPids
        self.binary = binary
        self.directory = directory
        self.clusterDirectory = clusterDirectory
        runner = CommandRunner(directory: directory)
    }

    /// Starts `flowkit cluster <arguments>` in a fresh temporary directory (the working directory
    /// too), runs `body`, and on every path stops the cluster and checks that none of its children
    /// outlived it.
    ///
    /// - Parameters:
    ///   - clusterDirectory: Where the arguments make the cluster keep its data, relative to the
    ///     temporary directory.
    static func run(
        _ arguments: (_ directory: String) -> [String],
        clusterDirectory: String,
        _ body: (ClusterCommandProcess) async throws -> Void
    ) async throws {
        let directory = try makeDirectory()
        let failuresBefore = RecordedFailures.count
        let spawned = SpawnedGroups()
        let cluster: ClusterCommandProcess
        do {
            cluster = try await SpawnedGroups.$current.withValue(spawned) {
                try await start(arguments(directory), directory: directory, workingDirectory: directory, clusterDirectory: directory + "/" + clusterDirectory)
            }
        } catch {
            print("harness: flowkit cluster did not come up; logs kept in \(directory)")
            throw error
        }
        do {
            try await SpawnedGroups.$current.withValue(spawned) { try await body(cluster) }
        } catch {
            await cluster.finish(passed: false)
            throw error
        }
        let survivors = await cluster.finish(passed: RecordedFailures.count == failuresBefore)
        #expect(survivors.isEmpty, "children of flowkit cluster that outlived it (killed now): \(survivors)")
        // Found by process group: only what this test started, whatever else runs beside it.
        let leftovers = spawned.leftovers
        #expect(leftovers.isEmpty, "processes this test started, left behind: \(leftovers)")
    }

    /// A fresh temporary directory for a test.
    static func makeDirectory() throws -> String {
        var template = Array("\(NSTemporaryDirectory())/flowkit-it-cluster-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed: errno \(errno)") }
        return String(cString: made)
    }

    /// Starts `flowkit cluster <arguments>` with `workingDirectory` as its current directory and
    /// waits until it printed "cluster up" and wrote `cluster.json`.
    ///
    /// - Parameters:
    ///   - clusterDirectory: Where the arguments make the cluster keep its data.
    static func start(
        _ arguments: [String],
        directory: String,
        workingDirectory: String,
        clusterDirectory: String
    ) async throws -> ClusterCommandProcess {
        let binary = try TestCluster.findBinary()
        let process = try ChildProcess.testChild(
            executable: "/usr/bin/env",
            arguments: ["-C", workingDirectory, binary, "cluster"] + arguments,
            name: "cluster",
            directory: directory
        )
        do {
            _ = try await process.waitForLine(prefix: "cluster up", timeout: .seconds(60))
            let file = try read(clusterDirectory)
            return ClusterCommandProcess(
                process: process, binary: binary, directory: directory, clusterDirectory: clusterDirectory, childPids: file.pids
            )
        } catch {
            await process.stop()
            throw error
        }
    }

    func file() throws -> File { try Self.read(clusterDirectory) }

    private static func read(_ clusterDirectory: String) throws -> File {
        let path = clusterDirectory + "/cluster.json"
        guard let data = FileManager.default.contents(atPath: path) else { throw HarnessError("no \(path)") }
        return try JSONDecoder().decode(File.self, from: data)
    }

    /// Runs `flowkit <arguments>` (with `--cluster-dir` pointing at this cluster when asked).
    func flowkit(_ arguments: [String], clusterDir: Bool = true, timeout: Duration = .seconds(30)) async throws -> CommandResult {
        try await runner.run(binary, arguments + (clusterDir ? ["--cluster-dir", clusterDirectory] : []), timeout: timeout)
    }

    /// Stops the cluster process if it still runs, and checks that no child of it is left;
    /// kills (by pid) and reports any that is.
    ///
    /// - Returns: The cluster's children that outlived it.
    @discardableResult
    func finish(passed: Bool) async -> [Int32] {
        await process.stop(grace: .seconds(10))
        let deadline = ContinuousClock.now + .seconds(5)
        while !childPids.allSatisfy(ProcessTable.isGone), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        var survivors: [Int32] = []
        for pid in childPids where !ProcessTable.isGone(pid) {
            survivors.append(pid)
            kill(pid, SIGKILL)
        }
        if passed && survivors.isEmpty && ProcessInfo.processInfo.environment["FLOWKIT_IT_KEEP_LOGS"] == nil {
            try? FileManager.default.removeItem(atPath: directory)
        } else {
            print("harness: cluster command logs kept in \(directory)\n\(process.stderrReport())")
        }
        return survivors
    }
}
