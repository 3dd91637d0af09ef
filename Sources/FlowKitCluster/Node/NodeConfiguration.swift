import ZeroMQ

/// How a node runs: who it is, where clients reach it, where its coordinator is.
public struct NodeConfiguration: Sendable {
    /// The node's id in the cluster: unique, 1 or more. Entries name their origin by it.
    public var id: UInt32
    /// A name for logs and status; `node-<id>` by default.
    public var name: String
    /// Clients connect here (ROUTER) to emit, query and cancel.
    public var clientEndpoint = "tcp://127.0.0.1:*"
    /// The client endpoint others are told (in status), when the bound one is not reachable as is:
    /// `tcp://0.0.0.0:7410` bound, `tcp://10.1.2.3:7410` advertised.
    public var advertisedEndpoint: String?
    /// The coordinator's endpoints.
    public var coordinator: CoordinatorEndpoints
    /// The other coordinators, when the cluster runs replicated ones: the node listens to all of
    /// them and submits to whichever leads (``coordinator`` is asked first).
    public var otherCoordinators: [CoordinatorEndpoints] = []
    /// How often the node reports its progress and digests to the coordinator.
    public var reportInterval: Duration = .seconds(1)
    /// How long a submission waits for its acknowledgement before it is sent again.
    public var retryInterval: Duration = .seconds(1)
    /// How long a client's emit may wait to be ordered before it is answered with an error.
    public var emitTimeout: Duration = .seconds(10)
    /// How long a query may wait for `min` applied.
    public var queryTimeout: Duration = .seconds(5)
    /// What emits, cancels and effects' submissions may hold: the same limits the coordinator
    /// applies (``AdmissionLimits``); larger events are refused as `oversize`.
    public var limits = AdmissionLimits()
    /// Applying nothing for this long while behind the head is logged as a stall.
    public var stallTimeout: Duration = .seconds(5)
    /// Submissions waiting for the coordinator, beyond which emits are refused as overloaded.
    public var maxPendingSubmissions = 50_000
    /// No heartbeat for this long means the coordinator is unreachable.
    public var coordinatorTimeout: Duration = .seconds(2)
    /// The subscriber socket's receive high-water mark, in messages: past it libzmq stops reading
    /// the connection, so what follows queues in the kernel and then at the coordinator, which
    /// drops what exceeds its `publishHighWaterMark`; the node repairs that gap from the log.
    /// `nil` keeps the transport's (``TransportOptions/highWaterMark``, 100,000).
    public var subscriberHighWaterMark: Int32?
    /// The subscription's kernel receive buffer (`SO_RCVBUF`) in bytes; `nil` lets the OS size it
    /// (on Linux up to megabytes, which a slow node fills before the coordinator queues anything).
    public var subscriberBufferBytes: Int32?
    /// How often timers run: retries, gap repair, timeouts.
    public var tickInterval: Duration = .milliseconds(50)
    /// Where the node keeps snapshots of its instances, so a restart resumes from the latest one
    /// plus the log after it. `nil`: a restarted node joins through the coordinator's snapshot.
    public var dataDirectory: String?
    /// Whether a node that starts empty, behind a log that has entries, joins through the
    /// coordinator's snapshot (the default, fast) or replays the log from its first entry.
    public var joinThroughSnapshot = true
    /// How often the node saves a local snapshot (when it has a data directory and applied more).
    public var snapshotInterval: Duration = .seconds(10)
    /// How long an instance stays unchanged before it rests as a compact record until its next use
    /// (its state kept as JSON: waking it decodes that); `nil`: never. Instances a snapshot
    /// restored rest at once whatever this says.
    public var restAfter: Duration? = .microseconds(Int64(ReplicaSet.restAfter))
    /// The coordinator's CURVE public key, when CURVE is on.
    public var coordinatorPublicKey: CurveKey?
    /// Socket options shared by every socket.
    public var transport = TransportOptions()
    /// Records when sampled entries pass each hop here, for `flowkit bench --trace`; off by default.
    @_spi(Wire) public var trace: HopTrace?

    public init(id: UInt32, coordinator: CoordinatorEndpoints, name: String? = nil) {
        precondition(id >= 1, "node ids start at 1")
        self.id = id
        self.coordinator = coordinator
        self.name = name ?? "node-\(id)"
    }
}
