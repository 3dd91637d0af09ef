/// The version of each flow this process's build reads up to (`ReplicatedFlow.version`): an
/// entry of a newer one is never applied here, neither skipped nor decoded with this build's types
/// (docs/VERSIONING.md, guarantee 3). Its replica stops at it, and says so, until the process runs
/// a build that reads it.
struct ReadableVersions: Sendable {
    private let versions: [String: UInt16]
    /// The lowest version registered: an entry at or below it is readable without a look-up (an
    /// entry of version 1 always is).
    private let lowest: UInt16
    /// The highest version registered: when it is 1, every state this build writes is version 1
    /// without a look-up.
    private let highest: UInt16

    init(_ registry: FlowRegistry) {
        var versions: [String: UInt16] = [:]
        for name in registry.names {
            if let flow = registry.flow(named: name) { versions[name] = flow.version }
        }
        self.versions = versions
        lowest = versions.values.min() ?? .max
        highest = versions.values.max() ?? 1
    }

    /// One flow's versions: a client following one instance with its own build's types.
    init(flow: String, version: UInt16) {
        versions = [flow: version]
        lowest = version
        highest = version
    }

    /// Reads every version: a follower of no registry of its own (a monitor), which decodes nothing.
    static let all = ReadableVersions(versions: [:])

    private init(versions: [String: UInt16]) {
        self.versions = versions
        lowest = .max
        highest = 1
    }

    private static func flow(of address: String) -> Substring? {
        Address.plainFlowName(of: address) ?? address.split(separator: "/").first
    }

    /// The version this build writes the state of an instance at `address` in: its flow's.
    func stateVersion(at address: String) -> UInt16 {
        guard highest > 1, let flow = Self.flow(of: address) else { return 1 }
        return versions[String(flow)] ?? 1
    }

    /// Why a snapshot's `instance` cannot be restored here (its state was written by a newer
    /// version of its flow), or nil when it can.
    func unreadable(_ instance: SnapshotChunkMessage.Instance) -> UnreadableEntry? {
        guard instance.stateVersion > lowest, let flow = Self.flow(of: instance.address), let reads = versions[String(flow)],
            instance.stateVersion > reads
        else { return nil }
        return UnreadableEntry(seq: instance.lastSeq, flow: String(flow), version: Int(instance.stateVersion), reads: Int(reads), inSnapshot: true)
    }

    /// Why `entry` cannot be applied here, or nil when it can. An entry of a flow not registered
    /// here is the replica's to refuse, as ever.
    func unreadable(_ entry: Entry) -> UnreadableEntry? {
        guard entry.version > lowest, let flow = Self.flow(of: entry.address),
            let reads = versions[String(flow)], entry.version > reads
        else { return nil }
        return UnreadableEntry(seq: entry.seq, flow: String(flow), version: Int(entry.version), reads: Int(reads))
    }
}

/// The first entry of the log a process cannot read: written by a newer version of its flow than
/// the process's build (`ReplicatedFlow.version`); or a snapshot's state so written. The process
/// applies nothing from it on.
public struct UnreadableEntry: Codable, Sendable, Equatable, Error, CustomStringConvertible {
    /// The entry's seq; for a snapshot's state, the seq of the last entry applied to the instance.
    public var seq: UInt64
    public var flow: String
    /// The version that wrote the entry (or the state).
    public var version: Int
    /// The newest version the process reads.
    public var reads: Int
    /// A snapshot's state, not an entry; absent for an entry.
    public var inSnapshot: Bool?

    public init(seq: UInt64, flow: String, version: Int, reads: Int, inSnapshot: Bool? = nil) {
        self.seq = seq
        self.flow = flow
        self.version = version
        self.reads = reads
        self.inSnapshot = inSnapshot
    }

    public var description: String {
        let what = inSnapshot == true ? "a snapshot's state of flow \"\(flow)\" (after entry \(seq))" : "entry \(seq) of flow \"\(flow)\""
        return "\(what) is at version \(version) and this build reads up to version \(reads): "
            + "it applies nothing from there on until it runs a build that reads it (docs/VERSIONING.md)"
    }
}
