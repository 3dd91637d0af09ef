/// The version of each flow this process's build reads up to (`ReplicatedFlow.version`): an
/// entry of a newer one is never applied here, neither skipped nor decoded with this build's types
/// (docs/VERSIONING.md, guarantee 3). Its replica stops at it, and says so, until the process runs
/// a build that reads it.
struct ReadableVersions: Sendable {
    /// Each flow's versions read: from the oldest its migrations reach to its own.
    private let versions: [String: ClosedRange<UInt16>]
    /// The lowest version registered: an entry of it is readable without a look-up when every
    /// flow reads from version 1 (``allReadFromOne``).
    private let lowest: UInt16
    /// Whether every flow reads every version up to its own (no flow above 1 without steps back).
    private let allReadFromOne: Bool
    /// The highest version registered: when it is 1, every state this build writes is version 1
    /// without a look-up.
    private let highest: UInt16

    init(_ registry: FlowRegistry) {
        var versions: [String: ClosedRange<UInt16>] = [:]
        for name in registry.names {
            if let flow = registry.flow(named: name) { versions[name] = flow.oldestReadable...flow.version }
        }
        self.versions = versions
        lowest = versions.values.map(\.upperBound).min() ?? .max
        highest = versions.values.map(\.upperBound).max() ?? 1
        allReadFromOne = versions.values.allSatisfy { $0.lowerBound == 1 }
    }

    /// One flow's versions: a client following one instance with its own build's types.
    init(flow: String, reads: ClosedRange<UInt16>) {
        versions = [flow: reads]
        lowest = reads.upperBound
        highest = reads.upperBound
        allReadFromOne = reads.lowerBound == 1
    }

    /// Reads every version: a follower of no registry of its own (a monitor), which decodes nothing.
    static let all = ReadableVersions(versions: [:])

    private init(versions: [String: ClosedRange<UInt16>]) {
        self.versions = versions
        lowest = .max
        highest = 1
        allReadFromOne = true
    }

    private static func flow(of address: String) -> Substring? {
        Address.plainFlowName(of: address) ?? address.split(separator: "/").first
    }

    /// The version this build writes the state of an instance at `address` in: its flow's.
    func stateVersion(at address: String) -> UInt16 {
        guard highest > 1, let flow = Self.flow(of: address) else { return 1 }
        return versions[String(flow)]?.upperBound ?? 1
    }

    /// The version this build writes the state of an instance at `address` (its UTF-8 bytes) in:
    /// no string is made of them when every flow is at version 1.
    func stateVersion(atUTF8 address: UnsafeRawBufferPointer) -> UInt16 {
        highest > 1 ? stateVersion(at: String(decoding: address, as: UTF8.self)) : 1
    }

    /// Why a snapshot's `instance` cannot be restored here (its state was written by a newer
    /// version of its flow), or nil when it can.
    func unreadable(_ instance: SnapshotChunkMessage.Instance) -> UnreadableEntry? {
        guard instance.stateVersion > lowest || !allReadFromOne, let flow = Self.flow(of: instance.address), let reads = versions[String(flow)],
            !reads.contains(instance.stateVersion)
        else { return nil }
        return UnreadableEntry(seq: instance.lastSeq, flow: String(flow), version: Int(instance.stateVersion), reads: reads, inSnapshot: true)
    }

    /// Why `entry` cannot be applied here, or nil when it can. An entry of a flow not registered
    /// here is the replica's to refuse, as ever.
    func unreadable(_ entry: Entry) -> UnreadableEntry? {
        guard entry.version > lowest || (!allReadFromOne && entry.kind == .event), let flow = Self.flow(of: entry.address),
            let reads = versions[String(flow)], !reads.contains(entry.version)
        else { return nil }
        return UnreadableEntry(seq: entry.seq, flow: String(flow), version: Int(entry.version), reads: reads)
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
    /// The oldest version the process reads, through its migrations; absent when it is 1.
    public var readsFrom: Int?
    /// A snapshot's state, not an entry; absent for an entry.
    public var inSnapshot: Bool?

    public init(seq: UInt64, flow: String, version: Int, reads: Int, readsFrom: Int? = nil, inSnapshot: Bool? = nil) {
        self.seq = seq
        self.flow = flow
        self.version = version
        self.reads = reads
        self.readsFrom = readsFrom
        self.inSnapshot = inSnapshot
    }

    init(seq: UInt64, flow: String, version: Int, reads range: ClosedRange<UInt16>, inSnapshot: Bool? = nil) {
        self.init(
            seq: seq, flow: flow, version: version, reads: Int(range.upperBound), readsFrom: range.lowerBound == 1 ? nil : Int(range.lowerBound),
            inSnapshot: inSnapshot
        )
    }

    public var description: String {
        let what = inSnapshot == true ? "a snapshot's state of flow \"\(flow)\" (after entry \(seq))" : "entry \(seq) of flow \"\(flow)\""
        let range = UInt16(clamping: readsFrom ?? 1)...UInt16(clamping: reads)
        let fix = version > reads ? "until it runs a build that reads it" : "until it runs a build with a migration step from that version"
        return "\(what) is at version \(version) and this build reads \(Self.describe(range)): it applies nothing from there on \(fix) (docs/VERSIONING.md)"
    }

    /// `up to version 2`; `versions 2 to 3` or `version 2 only` when the oldest is not 1.
    static func describe(_ reads: ClosedRange<UInt16>) -> String {
        if reads.lowerBound == 1 { return "up to version \(reads.upperBound)" }
        return reads.count == 1 ? "version \(reads.lowerBound) only" : "versions \(reads.lowerBound) to \(reads.upperBound)"
    }
}
