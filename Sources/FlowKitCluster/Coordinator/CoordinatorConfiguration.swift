/// How a coordinator runs: where it listens, where it keeps its log, how often it speaks.
public struct CoordinatorConfiguration: Sendable {
    /// How the log makes entries durable.
    public enum Durability: String, Sendable, Codable, CaseIterable {
        /// Every group commit is `fdatasync`ed before any entry of it is acknowledged or published:
        /// nothing acknowledged is lost, even on power loss. The default.
        case synced
        /// Commits are written to the operating system but not synced: a crash of the coordinator
        /// process loses nothing, a crash of the machine may lose the last acknowledged entries.
        case relaxed
    }

    /// Nodes connect here (ROUTER) to submit entries, say hello and report.
    public var submitEndpoint = "tcp://127.0.0.1:7400"
    /// Ordered entries, heartbeats, status and alarms are published here (PUB).
    public var publishEndpoint = "tcp://127.0.0.1:7401"
    /// Log ranges and snapshots are served here (ROUTER).
    public var syncEndpoint = "tcp://127.0.0.1:7402"
    /// Where the log lives; `nil` keeps it in memory (nothing survives a restart).
    public var dataDirectory: String?
    public var durability = Durability.synced
    /// How often a heartbeat carries the head seq to subscribers.
    public var heartbeatInterval: Duration = .milliseconds(100)
    /// How often the cluster status is published.
    public var statusInterval: Duration = .seconds(1)
    /// A node that has not reported for this long counts as down.
    public var nodeTimeout: Duration = .seconds(3)
    /// What submissions may hold: the same limits the nodes apply (``AdmissionLimits``).
    public var limits = AdmissionLimits()
    /// A node that applies nothing for this long while it is behind the head counts as stalled:
    /// an alarm, `flowkit status` and the `flowkit_nodes_stalled` gauge say so.
    public var stallTimeout: Duration = .seconds(5)
    /// A node down (no report) for this long is forgotten: it leaves the status, which then
    /// describes the nodes still there. Its going down was alarmed (`nodeDown`) and logged.
    public var forgetDownNodesAfter: Duration = .seconds(60)
    /// Entries ordered but not yet durable, beyond which submissions are refused as overloaded.
    public var maxPendingEntries = 100_000
    /// Submissions remembered per session for duplicate detection.
    public var dedupWindow = 65_536
    /// The most entries in one sync reply.
    public var maxRangeCount = 10_000
    /// Log segment files roll over past this size; compaction removes whole segments.
    public var segmentBytes = 64 << 20
    /// A snapshot of every instance is written after this many entries, so the log can be compacted.
    public var snapshotEvery: UInt64 = 100_000
    /// Entries kept in the log below the latest snapshot, so a node that fell behind can still
    /// repair from the log instead of fetching a whole snapshot.
    public var retainEntries: UInt64 = 100_000
    /// Socket options shared by every socket.
    public var transport = TransportOptions()
    /// Records when sampled entries pass each hop here, for `flowkit bench --trace`; off by default.
    @_spi(Wire) public var trace: HopTrace?

    public init() {}
}
