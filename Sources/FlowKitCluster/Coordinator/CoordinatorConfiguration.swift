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
    /// How long an instance of the coordinator's replica stays unchanged before it rests as a compact record until its next use
    /// (its state kept as JSON: waking it decodes that); `nil`: never. Instances a snapshot
    /// restored rest at once whatever this says.
    public var restAfter: Duration? = .microseconds(Int64(ReplicaSet.restAfter))
    /// A node down (no report) for this long is forgotten: it leaves the status, which then
    /// describes the nodes still there. Its going down was alarmed (`nodeDown`) and logged.
    public var forgetDownNodesAfter: Duration = .seconds(60)
    /// Messages the publish socket queues for one subscriber that reads slower than entries are
    /// published; past it that subscriber's are dropped (the node repairs the gap from the log).
    /// `nil` keeps the transport's (``TransportOptions/highWaterMark``, 100,000).
    public var publishHighWaterMark: Int32?
    /// The kernel send buffer (`SO_SNDBUF`) of each subscriber's connection, in bytes; `nil` lets
    /// the OS size it (on Linux up to 4 MiB, which a stopped subscriber fills before the
    /// `publishHighWaterMark` queue takes anything).
    public var publishBufferBytes: Int32?
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
    /// Replicated coordinators: this one's place among them, and the election service. `nil` (the
    /// default): one coordinator, which orders alone.
    public var replication: CoordinatorReplication?
    /// Records when sampled entries pass each hop here, for `flowkit bench --trace`; off by default.
    @_spi(Wire) public var trace: HopTrace?

    public init() {}
}

/// How a coordinator runs as one of several: one leads (orders, and tells an entry only once every
/// in-sync coordinator holds it), the others copy its log and stand ready to lead. Leadership,
/// the epoch and the in-sync set live in etcd.
public struct CoordinatorReplication: Sendable {
    /// This coordinator's id: one of ``coordinators``' keys.
    public var id: String
    /// Every coordinator of the cluster by id, this one included: where each listens.
    public var coordinators: [String: CoordinatorEndpoints]
    /// etcd's client URLs (`http://host:port`).
    public var etcdEndpoints: [String]
    /// The cluster's keys in etcd live under this prefix; one etcd can hold several clusters.
    public var etcdPrefix = "/flowkit/cluster"
    /// Seconds a leader's lease lives without renewal: how long a dead leader keeps its seat.
    public var leaseSeconds: Int64 = 2
    /// A standby that has not caught up with the leader's log for this long leaves the in-sync
    /// set (commits then go on without it); it rejoins once it holds everything committed.
    public var lagTimeout: Duration = .seconds(1)
    /// The fewest in-sync coordinators, the leader included, for anything to commit.
    public var minInSync = 2

    public init(id: String, coordinators: [String: CoordinatorEndpoints], etcdEndpoints: [String]) {
        self.id = id
        self.coordinators = coordinators
        self.etcdEndpoints = etcdEndpoints
    }

    func validate() throws {
        guard coordinators[id] != nil else {
            throw ConfigurationError("coordinator id \(id) is not among the coordinators (\(coordinators.keys.sorted().joined(separator: ", ")))")
        }
        guard minInSync >= 1, minInSync <= coordinators.count else {
            throw ConfigurationError("min in-sync \(minInSync) must be between 1 and the \(coordinators.count) coordinators")
        }
        guard leaseSeconds >= 2 else { throw ConfigurationError("the lease must be at least 2 seconds (etcd's minimum)") }
    }
}
