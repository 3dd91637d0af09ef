import FlowKitCluster
import FlowKitProcesses
import Foundation

/// A one-member etcd run as a child process, its data in a directory of its own: the election
/// service `flowkit cluster --coordinators 3` starts, and the tests' too.
package struct EtcdServer: Sendable {
    package let process: ChildProcess
    /// Where clients reach it: `http://127.0.0.1:port`.
    package let clientURL: String
    package let peerURL: String
    package let dataDirectory: String
    /// The network namespace it runs in, if not this process's.
    package let namespace: String?

    /// Whether the `etcd` binary is installed (Debian's `etcd-server`).
    package static var isInstalled: Bool { ChildProcess.findProgram("etcd") != nil }

    /// Starts etcd and waits until it serves.
    ///
    /// - Parameters:
    ///   - directory: Its output files go here, and its data in `directory/name.data` (kept: a
    ///     restart on the same directory and ports finds its keys and leases again).
    ///   - host: The address it listens on.
    ///   - clientPort: The client port (0: a free one).
    ///   - peerPort: The peer port (0: a free one).
    ///   - namespace: A network namespace to run it in (`host` is then one of its addresses).
    package static func start(
        directory: String,
        name: String = "etcd",
        host: String = "127.0.0.1",
        clientPort: Int = 0,
        peerPort: Int = 0,
        namespace: String? = nil,
        whenParentDies: ChildProcess.ParentDeath = .killed
    ) async throws -> EtcdServer {
        guard let etcd = ChildProcess.findProgram("etcd") else {
            throw ChildProcessError("etcd is not installed: apt-get install -y etcd-server etcd-client (scripts/install-deps --etcd does)")
        }
        let clientURL = "http://\(host):\(clientPort == 0 ? try FreePorts.one() : clientPort)"
        let peerURL = "http://\(host):\(peerPort == 0 ? try FreePorts.one() : peerPort)"
        let dataDirectory = "\(directory)/\(name).data"
        let process = try ChildProcess.spawn(
            executable: etcd,
            arguments: [
                "--name", name, "--data-dir", dataDirectory,
                "--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
                "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
                "--initial-cluster", "\(name)=\(peerURL)",
                "--logger", "zap", "--log-level", "warn",
            ],
            name: name,
            directory: directory,
            appendingStderr: true,
            namespace: namespace,
            whenParentDies: whenParentDies
        )
        let server = EtcdServer(process: process, clientURL: clientURL, peerURL: peerURL, dataDirectory: dataDirectory, namespace: namespace)
        try await server.waitUntilServing(timeout: .seconds(20))
        return server
    }

    /// Starts it again on the same ports and data, after it was stopped or killed.
    package func restarted(directory: String, name: String = "etcd") async throws -> EtcdServer {
        try await Self.start(
            directory: directory, name: name, host: Self.host(clientURL), clientPort: Self.port(clientURL), peerPort: Self.port(peerURL), namespace: namespace
        )
    }

    /// Waits until a read succeeds.
    package func waitUntilServing(timeout: Duration) async throws {
        let client = try EtcdClient(endpoints: [clientURL], timeout: .seconds(1))
        let deadline = ContinuousClock.now + timeout
        while true {
            if (try? await client.get("/flowkit-health")) != nil { return }
            if let status = process.reapIfExited() {
                throw ChildProcessError("etcd exited (status \(status)) before serving:\n\(process.stderrReport())")
            }
            guard ContinuousClock.now < deadline else {
                throw ChildProcessError("etcd did not serve on \(clientURL) within \(timeout):\n\(process.stderrReport())")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    private static func host(_ url: String) -> String {
        String(url.dropFirst("http://".count).prefix { $0 != ":" })
    }

    private static func port(_ url: String) -> Int {
        Int(url.split(separator: ":").last ?? "") ?? 0
    }
}
