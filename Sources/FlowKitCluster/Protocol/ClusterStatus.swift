/// The cluster as the coordinator sees it.
public struct ClusterStatus: Codable, Sendable, Equatable {
    public struct Node: Codable, Sendable, Equatable {
        public var id: UInt32
        public var name: String
        public var clientEndpoint: String
        public var applied: UInt64
        /// `head - applied` when the report arrived.
        public var lag: UInt64
        /// Whether a report arrived within the liveness timeout.
        public var alive: Bool
        /// Milliseconds since the node's last report.
        public var lastSeenMillis: UInt64
        public var digest: String
        public var instances: Int
        public var runningEffects: Int
        public var pendingSubmissions: Int
        /// The seq `digest` describes exactly, 0 when the node's digests lag its state (see
        /// ``NodeReport/digestSeq``).
        public var digestSeq: UInt64
        /// Alive but behind the head and applying nothing for the coordinator's stall timeout.
        public var stalled: Bool
        /// The node process's session: a restarted node is a new one.
        public var session: String?
        /// How many instances' effects this node process owns (may run), as the log says.
        public var ownedInstances: Int?
        /// The entry the node stopped at because its build cannot read it (``Alarm/Kind/versionUnreadable``).
        public var unreadable: UnreadableEntry?
        /// Of ``instances``, those at rest, as its last report said (``NodeReport/instancesAtRest``).
        public var instancesAtRest: Int?
        /// Of ``instances``, those whose latest change its digest did not hold yet, as its last report said.
        public var instancesUnhashed: Int?
        /// The version its build writes of each flow not at version 1, as its HELLO said.
        public var flowVersions: [String: UInt16]?
        /// The wire protocol its HELLO came in, when older than the coordinator's newest.
        public var protocolVersion: UInt8?

        public init(
            id: UInt32, name: String, clientEndpoint: String, applied: UInt64, lag: UInt64, alive: Bool,
            lastSeenMillis: UInt64, digest: String, instances: Int, runningEffects: Int, pendingSubmissions: Int,
            digestSeq: UInt64 = 0, stalled: Bool = false
        ) {
            self.digestSeq = digestSeq
            self.stalled = stalled
            self.id = id
            self.name = name
            self.clientEndpoint = clientEndpoint
            self.applied = applied
            self.lag = lag
            self.alive = alive
            self.lastSeenMillis = lastSeenMillis
            self.digest = digest
            self.instances = instances
            self.runningEffects = runningEffects
            self.pendingSubmissions = pendingSubmissions
        }
    }

    public var epoch: UInt32
    public var head: UInt64
    public var firstSeq: UInt64
    /// Entries ordered per second, over the last status interval.
    public var entriesPerSecond: Double
    public var nodes: [Node]
    /// Divergences seen so far in this coordinator's term.
    public var divergences: Int
    /// Entries of the log too large for any message, served as quarantined stand-ins (kind 4).
    public var quarantined: Int
    /// Instances whose effects this coordinator moved off node processes that went down, in its term.
    public var takeovers: Int?
    /// Effects' submissions refused in this term because their instance had been taken over.
    public var staleSubmissions: Int?
    /// With replicated coordinators: the leader's account of every coordinator's copy.
    public var replication: ReplicationStatus?
    /// For each flow a live node writes at a version above 1, the version the cluster orders and
    /// who holds a newer one back (docs/VERSIONING.md, "Rolling upgrade"); absent while every flow
    /// is at version 1.
    public var versions: [String: FlowVersions]?

    public init(
        epoch: UInt32, head: UInt64, firstSeq: UInt64, entriesPerSecond: Double, nodes: [Node], divergences: Int,
        quarantined: Int = 0
    ) {
        self.quarantined = quarantined
        self.epoch = epoch
        self.head = head
        self.firstSeq = firstSeq
        self.entriesPerSecond = entriesPerSecond
        self.nodes = nodes
        self.divergences = divergences
    }
}

/// Replicated coordinators as their leader sees them: who leads, what is committed, and how far
/// each standby's copy of the log is.
public struct ReplicationStatus: Codable, Sendable, Equatable {
    public struct Coordinator: Codable, Sendable, Equatable {
        public var id: String
        /// `leader` or `standby`.
        public var role: String
        /// Whether it is in the in-sync set: it may lead next, and every commit waits for it.
        public var inSync: Bool
        /// The last seq it holds durably (the leader: its log end).
        public var durable: UInt64
        /// How many entries of the leader's log it lacks.
        public var lag: UInt64
        /// Milliseconds since its last FETCH; `nil` for the leader, and for a standby that has not
        /// fetched in this term.
        public var lastFetchMillis: UInt64?

        public init(id: String, role: String, inSync: Bool, durable: UInt64, lag: UInt64, lastFetchMillis: UInt64?) {
            self.id = id
            self.role = role
            self.inSync = inSync
            self.durable = durable
            self.lag = lag
            self.lastFetchMillis = lastFetchMillis
        }
    }

    public var leader: String
    /// Milliseconds since the Unix epoch when this leader began its term.
    public var leaderSince: UInt64
    /// The leader's durable log end; `head` is the commit point.
    public var written: UInt64
    /// The fewest in-sync coordinators for anything to commit.
    public var minInSync: Int
    /// Every coordinator, the leader first, then the standbys by id.
    public var coordinators: [Coordinator]

    public init(leader: String, leaderSince: UInt64, written: UInt64, minInSync: Int, coordinators: [Coordinator]) {
        self.leader = leader
        self.leaderSince = leaderSince
        self.written = written
        self.minInSync = minInSync
        self.coordinators = coordinators
    }
}

/// A condition an operator must see.
public struct Alarm: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// Two replicas hold different states for the same instance after the same entry.
        case divergence
        /// A node stopped reporting.
        case nodeDown
        /// The log cannot take writes (disk full); submissions are refused until it can.
        case logUnavailable
        /// Effects of a node process that went down cannot move: no live node runs their flow.
        /// The coordinator retries every status interval.
        case effectsLost
        /// A node process went down (or restarted) while it owned effects: they moved to surviving
        /// nodes (takeover entries), which resume them.
        case effectsTakenOver
        /// A node alive but behind the head has applied nothing for the stall timeout.
        case nodeStalled
        /// An entry of the log is too large for any message: it is served as a quarantined
        /// stand-in, which every replica skips (its event is not applied anywhere).
        case entryQuarantined
        /// Replicated coordinators: commits wait for an in-sync standby that has fallen behind, and
        /// the in-sync set is at its minimum, so it cannot be left out.
        case commitsBlocked
        /// A node met an entry written by a newer version of its flow than its build reads: it
        /// stopped applying there (it neither skips nor guesses) until it is upgraded.
        case versionUnreadable
    }

    public var kind: Kind
    public var message: String
    public var address: String?
    public var seq: UInt64?
    /// `node name → digest` for a divergence.
    public var digests: [String: String]?

    public init(kind: Kind, message: String, address: String? = nil, seq: UInt64? = nil, digests: [String: String]? = nil) {
        self.kind = kind
        self.message = message
        self.address = address
        self.seq = seq
        self.digests = digests
    }
}
