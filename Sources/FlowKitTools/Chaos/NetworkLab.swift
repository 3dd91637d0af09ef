import Foundation

/// A private network of Linux network namespaces for one chaos run: one namespace per process
/// (coordinator, each node), joined by veth pairs to a bridge in a hub namespace, plus one veth
/// from the hub to the tool's own namespace so it can reach every process.
///
/// ```
///  tool (root ns) ── fk<pid>r ═╗
///                              ║ br0 (ns fk<pid>-hub)
///  ns fk<pid>-c   (10.x.y.1)  ═╣
///  ns fk<pid>-n1  (10.x.y.11) ═╣   partition: the hub side of a node's veth goes down
///  ns fk<pid>-n2  (10.x.y.12) ═╝   slow link: netem (or tbf) on both ends of a node's veth
/// ```
///
/// Only the lab's own namespaces and links are created or changed; ``tearDown()`` deletes them all,
/// and ``removeStale()`` deletes those of earlier runs whose process is gone.
package struct NetworkLab: Sendable {
    let tag: String
    let subnet: String
    /// Every member by name, with the last octet of its address.
    package let members: [(name: String, host: Int)]

    /// A lab of named members: `etcd`, `c1`, `n1`, … (short names: they become link names).
    package init(members: [(name: String, host: Int)]) {
        let pid = getpid()
        tag = "fk\(pid)"
        subnet = "10.213.\(Int(pid) % 200 + 20)"
        self.members = members
    }

    /// The chaos tool's lab: the coordinator `c` at .1, node `n<id>` at .10+id.
    init(nodeIDs: [UInt32]) {
        self.init(members: [("c", 1)] + nodeIDs.map { ("n\($0)", 10 + Int($0)) })
    }

    var nodeIDs: [UInt32] { members.compactMap { $0.name.hasPrefix("n") ? UInt32($0.name.dropFirst()) : nil } }
    var hub: String { "\(tag)-hub" }
    package func namespace(_ member: String) -> String { "\(tag)-\(member)" }
    package func address(_ member: String) -> String { "\(subnet).\(members.first { $0.name == member }?.host ?? 0)" }
    var coordinatorNamespace: String { namespace("c") }
    func namespace(node id: UInt32) -> String { namespace("n\(id)") }
    var coordinatorAddress: String { address("c") }
    func address(node id: UInt32) -> String { address("n\(id)") }
    /// The hub end of a member's veth (the end a partition takes down).
    private func hubLink(_ member: String) -> String { "h\(tag.dropFirst(2))\(member)" }

    /// Whether this machine lets us build the lab: root, `ip netns` and `tc`.
    package static func check() -> String? {
        guard getuid() == 0 else { return "network namespaces need root" }
        guard let ip = Shell.find("ip"), Shell.run(ip, ["netns", "list"]).status == 0 else { return "`ip netns` is not available" }
        guard Shell.find("tc") != nil else { return "`tc` (iproute2) is not installed" }
        return nil
    }

    package func setUp() throws {
        try ip(["netns", "add", hub])
        try ip(["-n", hub, "link", "set", "lo", "up"])
        try ip(["-n", hub, "link", "add", "br0", "type", "bridge"])
        try ip(["-n", hub, "link", "set", "br0", "up"])
        for member in members { try attach(member: member.name, namespace: namespace(member.name), address: address(member.name)) }
        // The tool's way in.
        let root = "\(tag)r"
        try ip(["link", "add", root, "type", "veth", "peer", "name", hubLink("r")])
        try ip(["link", "set", hubLink("r"), "netns", hub])
        try ip(["-n", hub, "link", "set", hubLink("r"), "master", "br0", "up"])
        try ip(["addr", "add", "\(subnet).254/24", "dev", root])
        try ip(["link", "set", root, "up"])
    }

    private func attach(member: String, namespace: String, address: String) throws {
        try ip(["netns", "add", namespace])
        let inner = "\(tag)\(member)"
        try ip(["link", "add", inner, "type", "veth", "peer", "name", hubLink(member)])
        try ip(["link", "set", hubLink(member), "netns", hub])
        try ip(["-n", hub, "link", "set", hubLink(member), "master", "br0", "up"])
        try ip(["link", "set", inner, "netns", namespace])
        try ip(["-n", namespace, "link", "set", inner, "name", "eth0"])
        try ip(["-n", namespace, "addr", "add", "\(address)/24", "dev", "eth0"])
        try ip(["-n", namespace, "link", "set", "eth0", "up"])
        try ip(["-n", namespace, "link", "set", "lo", "up"])
    }

    /// Takes node `id`'s link down at the hub (or brings it back).
    func setPartitioned(_ id: UInt32, _ partitioned: Bool) throws {
        try setPartitioned("n\(id)", partitioned)
    }

    /// Takes `member`'s link down at the hub, cutting it from every other member (or brings it back).
    package func setPartitioned(_ member: String, _ partitioned: Bool) throws {
        try ip(["-n", hub, "link", "set", hubLink(member), partitioned ? "down" : "up"])
    }

    /// Cuts `member` from `others` only, both ways, with blackhole routes in each one's namespace
    /// (its link to the rest stays up); or heals that cut.
    package func setCut(_ member: String, from others: [String], _ cut: Bool) throws {
        for other in others {
            for (from, to) in [(member, other), (other, member)] {
                let route = ["route", cut ? "replace" : "del", "blackhole", "\(address(to))/32"]
                try ip(["-n", namespace(from)] + route)
            }
        }
    }

    /// Makes node `id`'s link slow and lossy, on both ends: `tc netem` delay and loss where the
    /// kernel has `sch_netem`, else a `tbf` rate limit that queues and drops what exceeds it.
    ///
    /// - Returns: What was applied, for the report.
    @discardableResult
    func setDegraded(_ id: UInt32, _ degraded: Bool) throws -> String {
        guard let tc = Shell.find("tc") else { throw ChaosError("tc is not installed") }
        let links = [(namespace(node: id), "eth0"), (hub, hubLink("n\(id)"))]
        guard degraded else {
            for (namespace, link) in links { _ = Shell.run(tc, ["-n", namespace, "qdisc", "del", "dev", link, "root"]) }
            return "restored"
        }
        let shapes = [
            ("netem delay 40ms ±20ms, loss 10%", ["netem", "delay", "40ms", "20ms", "loss", "10%"]),
            ("tbf 200 kbit/s, 50 ms queue (no sch_netem in this kernel)", ["tbf", "rate", "200kbit", "burst", "4kb", "latency", "50ms"]),
        ]
        var failures: [String] = []
        for (description, shape) in shapes {
            var applied = true
            for (namespace, link) in links {
                let result = Shell.run(tc, ["-n", namespace, "qdisc", "replace", "dev", link, "root"] + shape)
                if result.status != 0 {
                    failures.append("\(shape[0]): \(result.output)")
                    applied = false
                    break
                }
            }
            if applied { return description }
        }
        throw ChaosError("tc could not shape the link: \(failures.joined(separator: "; "))")
    }

    /// Deletes every namespace and link of this lab; safe to call twice.
    package func tearDown() {
        guard let ip = Shell.find("ip") else { return }
        for namespace in [hub] + members.map({ namespace($0.name) }) {
            _ = Shell.run(ip, ["netns", "del", namespace])
        }
        _ = Shell.run(ip, ["link", "del", "\(tag)r"])
    }

    /// Deletes the namespaces and links that earlier runs (their process gone) left behind.
    package static func removeStale() {
        guard let ip = Shell.find("ip") else { return }
        let names = Shell.run(ip, ["netns", "list"]).output.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        for name in names where name.hasPrefix("fk") {
            guard let dash = name.firstIndex(of: "-"), let pid = Int32(name[name.index(name.startIndex, offsetBy: 2)..<dash]) else { continue }
            if kill(pid, 0) != 0, errno == ESRCH {
                _ = Shell.run(ip, ["netns", "del", name])
                _ = Shell.run(ip, ["link", "del", "fk\(pid)r"])
            }
        }
    }

    private func ip(_ arguments: [String]) throws {
        guard let ip = Shell.find("ip") else { throw ChaosError("ip (iproute2) is not installed") }
        let result = Shell.run(ip, arguments)
        guard result.status == 0 else { throw ChaosError("ip \(arguments.joined(separator: " ")) failed: \(result.output)") }
    }
}

/// Runs a short system command and collects its output.
enum Shell {
    static func run(_ executable: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return (127, "\(error)")
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The path of `name` in the usual system directories.
    static func find(_ name: String) -> String? {
        ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
