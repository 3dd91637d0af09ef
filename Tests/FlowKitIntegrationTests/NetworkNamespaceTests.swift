#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// Issue 6 / DESIGN section 9: the cluster across a real network boundary. The coordinator and
/// two nodes run in separate Linux network namespaces joined by veth pairs to a bridge
/// (`scripts/netns-cluster.sh` does it and cleans up after itself on every path); clients emit
/// across the bridge and the nodes must converge. Skipped, saying why, where namespaces cannot be
/// made (not root, no iproute2, a container that forbids it).
extension ClusterProcessTests {
    @Test(.enabled(if: NetworkNamespaces.available, "network namespaces are not available: \(NetworkNamespaces.reason)"))
    func clusterConvergesAcrossNetworkNamespaces() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/netns-cluster.sh").path
        let directory = try ClusterCommandProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await CommandRunner(directory: directory).run(
            "/bin/bash", [script, try TestCluster.findBinary()],
            timeout: .seconds(90), grace: .seconds(15)  // on SIGTERM the script deletes its namespaces
        )
        print(result.stdout.split(separator: "\n").map { "  \($0)" }.joined(separator: "\n"))
        if result.exitCode == 77 {
            print("netns test skipped: \(result.stdout.split(separator: "\n").last ?? "")")
            return
        }
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdout.contains("netns: across the bridge: converged"))
        #expect(result.stdout.contains("netns: PASS"))
        // The script deleted what it made.
        let owner = result.stdout.split(separator: "\n").first { $0.contains("namespaces fkit") }
            .flatMap { $0.split(separator: " ").first { $0.hasPrefix("fkit") } }
            .map { String($0.prefix { $0 != "-" }) }
        if let owner {
            #expect(!NetworkNamespaces.list().contains { $0.hasPrefix(owner + "-") }, "namespaces of \(owner) left behind: \(NetworkNamespaces.list())")
        }
    }
}

/// Whether this machine lets the tests make network namespaces (checked once, by making one).
enum NetworkNamespaces {
    static let (available, reason): (Bool, String) = probe()

    private static func probe() -> (Bool, String) {
        guard geteuid() == 0 else { return (false, "the tests do not run as root") }
        let candidates: [String] = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        guard let ip = candidates.first(where: { access($0, X_OK) == 0 }) else {
            return (false, "no ip command (iproute2)")
        }
        guard access("/usr/bin/setpriv", X_OK) == 0 else { return (false, "no setpriv (util-linux)") }
        let name = "fkit\(getpid())-probe"
        let (added, output) = run(ip, ["netns", "add", name])
        guard added else { return (false, "'ip netns add' failed: \(output)") }
        _ = run(ip, ["netns", "del", name])
        return (true, "")
    }

    /// The namespaces `ip netns list` shows.
    static func list() -> [String] {
        run("/usr/sbin/ip", ["netns", "list"]).output.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    private static func run(_ executable: String, _ arguments: [String]) -> (ok: Bool, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (false, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus == 0, String(decoding: data, as: UTF8.self))
    }
}
