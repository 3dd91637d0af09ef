import DequeModule

/// The coordinator's view of the nodes: who said hello, how far each has applied, whether it is
/// alive, and whether two of them hold different states for the same instance after the same entry.
///
/// Pure: times are passed in, so liveness and divergence are tested without clocks or sockets.
struct Membership {
    struct Member {
        var id: UInt32
        var session: UInt64
        var info: NodeInfo
        var applied: UInt64 = 0
        var lastSeen: UInt64
        var report: NodeReport?
    }

    /// Two replicas disagree about an instance after the same entry.
    struct Divergence: Equatable {
        var address: String
        var seq: UInt64
        /// `node name → digest`.
        var digests: [String: String]
    }

    private(set) var members: [UInt32: Member] = [:]
    /// The first digest reported for each recent `(address, seq)`, and who reported it.
    private var references: [ReferenceKey: (digest: String, reporter: String)] = [:]
    /// Oldest first; a deque, as the oldest go one by one once it is full.
    private var referenceOrder: Deque<ReferenceKey> = []
    /// How many `(address, seq)` references are kept for comparison.
    let referenceCapacity: Int
    /// Microseconds without a report after which a node counts as down.
    let timeout: UInt64
    private(set) var divergenceCount = 0

    private struct ReferenceKey: Hashable {
        var address: String
        var seq: UInt64
    }

    /// How many nodes are remembered; past it, the one heard from least recently is forgotten, so
    /// HELLOs with made-up node ids (a misconfigured or hostile peer) cannot grow the table.
    let memberCapacity: Int

    init(timeout: UInt64, referenceCapacity: Int = 200_000, memberCapacity: Int = 1_024) {
        self.timeout = timeout
        self.referenceCapacity = referenceCapacity
        self.memberCapacity = memberCapacity
    }

    /// Forgets the least recently seen members beyond the capacity, never `keeping`.
    private mutating func evictBeyondCapacity(keeping node: UInt32) {
        while members.count > memberCapacity {
            guard let oldest = members.values.filter({ $0.id != node }).min(by: { $0.lastSeen < $1.lastSeen }) else { return }
            members[oldest.id] = nil
        }
    }

    /// Records a node's hello.
    ///
    /// - Returns: How many effects the node's previous process was running when it last reported,
    ///   if this hello is from a new process: those effects were lost with it.
    mutating func hello(node: UInt32, session: UInt64, info: NodeInfo, now: UInt64) -> Int {
        var lost = 0
        if let previous = members[node], previous.session != session, previous.session != 0 {
            lost = previous.report?.runningEffects ?? 0
        }
        if let existing = members[node], existing.session == session {
            members[node]!.info = info
            members[node]!.lastSeen = now
        } else {
            members[node] = Member(id: node, session: session, info: info, lastSeen: now)
            evictBeyondCapacity(keeping: node)
        }
        return lost
    }

    /// Records a report.
    ///
    /// - Returns: The divergences it reveals.
    mutating func report(_ message: NodeReportMessage, now: UInt64) -> [Divergence] {
        var member = members[message.node] ?? Member(
            id: message.node, session: 0,
            info: NodeInfo(name: message.report.name, clientEndpoint: "", flows: [], pid: 0),
            lastSeen: now
        )
        member.applied = message.applied
        member.lastSeen = now
        member.report = message.report
        members[message.node] = member
        evictBeyondCapacity(keeping: message.node)
        var found: [Divergence] = []
        for (address, instance) in message.report.digests {
            if let divergence = compare(address: address, instance: instance, reporter: message.report.name) {
                found.append(divergence)
            }
        }
        return found
    }

    /// Compares a digest with the reference for its `(address, seq)`, or makes it the reference.
    mutating func compare(address: String, instance: InstanceDigest, reporter: String) -> Divergence? {
        let key = ReferenceKey(address: address, seq: instance.seq)
        guard let reference = references[key] else {
            references[key] = (instance.digest, reporter)
            referenceOrder.append(key)
            while referenceOrder.count > referenceCapacity, let old = referenceOrder.popFirst() {
                references[old] = nil
            }
            return nil
        }
        guard reference.digest != instance.digest, reference.reporter != reporter else { return nil }
        divergenceCount += 1
        return Divergence(
            address: address,
            seq: instance.seq,
            digests: [reference.reporter: reference.digest, reporter: instance.digest]
        )
    }

    func isAlive(_ member: Member, now: UInt64) -> Bool {
        now < member.lastSeen || now - member.lastSeen <= timeout
    }

    /// The status published on `$status`.
    func status(epoch: UInt32, head: UInt64, firstSeq: UInt64, entriesPerSecond: Double, now: UInt64) -> ClusterStatus {
        ClusterStatus(
            epoch: epoch,
            head: head,
            firstSeq: firstSeq,
            entriesPerSecond: entriesPerSecond,
            nodes: members.values.sorted { $0.id < $1.id }.map { member in
                ClusterStatus.Node(
                    id: member.id,
                    name: member.info.name,
                    clientEndpoint: member.info.clientEndpoint,
                    applied: member.applied,
                    lag: head > member.applied ? head - member.applied : 0,
                    alive: isAlive(member, now: now),
                    lastSeenMillis: now > member.lastSeen ? (now - member.lastSeen) / 1_000 : 0,
                    digest: member.report?.digest ?? "",
                    instances: member.report?.instances ?? 0,
                    runningEffects: member.report?.runningEffects ?? 0,
                    pendingSubmissions: member.report?.pendingSubmissions ?? 0
                )
            },
            divergences: divergenceCount
        )
    }
}
