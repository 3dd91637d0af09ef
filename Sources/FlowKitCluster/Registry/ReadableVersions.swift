/// The version of each flow this process's build reads up to (`ReplicatedFlow.version`): an
/// entry of a newer one is never applied here, neither skipped nor decoded with this build's types
/// (docs/VERSIONING.md, guarantee 3). Its replica stops at it, and says so, until the process runs
/// a build that reads it.
struct ReadableVersions: Sendable {
    private let versions: [String: UInt16]
    /// The lowest version registered: an entry at or below it is readable without a look-up (an
    /// entry of version 1 always is).
    private let lowest: UInt16

    init(_ registry: FlowRegistry) {
        var versions: [String: UInt16] = [:]
        for name in registry.names {
            if let flow = registry.flow(named: name) { versions[name] = flow.version }
        }
        self.versions = versions
        lowest = versions.values.min() ?? .max
    }

    /// One flow's versions: a client following one instance with its own build's types.
    init(flow: String, version: UInt16) {
        versions = [flow: version]
        lowest = version
    }

    /// Reads every version: a follower of no registry of its own (a monitor), which decodes nothing.
    static let all = ReadableVersions(versions: [:])

    private init(versions: [String: UInt16]) {
        self.versions = versions
        lowest = .max
    }

    /// Why `entry` cannot be applied here, or nil when it can. An entry of a flow not registered
    /// here is the replica's to refuse, as ever.
    func unreadable(_ entry: Entry) -> UnreadableEntry? {
        guard entry.version > lowest, let flow = Address.plainFlowName(of: entry.address) ?? entry.address.split(separator: "/").first,
            let reads = versions[String(flow)], entry.version > reads
        else { return nil }
        return UnreadableEntry(seq: entry.seq, flow: String(flow), version: Int(entry.version), reads: Int(reads))
    }
}

/// The first entry of the log a process cannot read: written by a newer version of its flow than
/// the process's build (`ReplicatedFlow.version`). The process applies nothing from it on.
public struct UnreadableEntry: Codable, Sendable, Equatable, CustomStringConvertible {
    public var seq: UInt64
    public var flow: String
    /// The version that wrote the entry.
    public var version: Int
    /// The newest version the process reads.
    public var reads: Int

    public init(seq: UInt64, flow: String, version: Int, reads: Int) {
        self.seq = seq
        self.flow = flow
        self.version = version
        self.reads = reads
    }

    public var description: String {
        "entry \(seq) of flow \"\(flow)\" is at version \(version) and this build reads up to version \(reads): "
            + "it applies nothing from there on until it runs a build that reads it (docs/VERSIONING.md)"
    }
}
