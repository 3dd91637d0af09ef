extension ClusterStatus {
    /// What keeps the cluster from being healthy now, one sentence each; empty when every node is
    /// alive, has applied the head, and reports a digest of the head that equals every other
    /// node's, with no divergence this term. `flowkit status` exits 0 only then.
    public var problems: [String] {
        guard !nodes.isEmpty else { return ["no node has reported to the coordinator"] }
        var problems: [String] = []
        // A busy cluster's head moves on between a node's report and this status (a timer ticking
        // once a second is enough): a node within two seconds of ordering of the head keeps up.
        let keepingUp = UInt64((entriesPerSecond * 2).rounded(.up))
        for node in nodes {
            if !node.alive {
                problems.append("\(node.name) is down: no report for \(node.lastSeenMillis) ms")
            } else if let unreadable = node.unreadable {
                problems.append("\(node.name) must be upgraded: \(unreadable)")
            } else if node.stalled {
                problems.append("\(node.name) is stalled: it has applied nothing past \(node.applied), \(node.lag) behind the head \(head)")
            } else if node.applied + keepingUp < head {
                problems.append("\(node.name) has applied \(node.applied) of \(head)")
            } else if node.digestSeq != node.applied {
                problems.append("\(node.name)'s digest describes seq \(node.digestSeq), not yet its applied seq \(node.applied) (still hashing)")
            }
        }
        // Digests compare at one seq: nodes that reported at the same applied seq hold equal states.
        let current = nodes.filter { $0.alive && $0.digestSeq == $0.applied && $0.applied + keepingUp >= head }
        for (seq, atSeq) in Dictionary(grouping: current, by: \.digestSeq).sorted(by: { $0.key < $1.key }) where Set(atSeq.map(\.digest)).count > 1 {
            let listed = atSeq.map { "\($0.name) \($0.digest.prefix(16))" }.joined(separator: ", ")
            problems.append("digests differ at seq \(seq): \(listed)")
        }
        for node in nodes where node.alive {
            guard let version = node.protocolVersion else { continue }
            problems.append("\(node.name) speaks wire protocol \(version): upgrade it; events of flow versions above 1 wait until then")
        }
        for (flow, versions) in (self.versions ?? [:]).sorted(by: { $0.key < $1.key }) where versions.newest > versions.agreed {
            problems.append(
                "flow \"\(flow)\" is being upgraded: version \(versions.newest) waits for \(versions.behind.joined(separator: ", ")) (at \(versions.agreed)); "
                    + "the newer nodes' events are refused until then"
            )
        }
        if let replication {
            problems += replication.problems
        }
        if divergences > 0 {
            problems.append("\(divergences) divergence(s) this term: replicas held different states after the same entry (see the alarms)")
        }
        return problems
    }
}

extension ReplicationStatus {
    /// How long an in-sync standby may go without a FETCH before status calls it a problem.
    public static let silentAfterMillis: UInt64 = 3_000

    /// Standbys out of the in-sync set or silent, and too few in sync for anything to commit.
    public var problems: [String] {
        var problems: [String] = []
        for coordinator in coordinators where !coordinator.inSync {
            let fetched = coordinator.lastFetchMillis.map { "last fetch \($0) ms ago" } ?? "no fetch from it this term"
            problems.append("coordinator \(coordinator.id) is not in sync: \(coordinator.lag) entries behind the leader \(leader) (\(fetched))")
        }
        // A live standby fetches at least every 200 ms (the leader holds a FETCH no longer); in an
        // idle cluster a dead one is not behind, so silence is what tells.
        for coordinator in coordinators where coordinator.inSync && (coordinator.lastFetchMillis ?? 0) > Self.silentAfterMillis {
            problems.append("coordinator \(coordinator.id) has not fetched from the leader for \(coordinator.lastFetchMillis!) ms")
        }
        let inSync = coordinators.filter(\.inSync).count
        if inSync < minInSync {
            problems.append("only \(inSync) coordinator(s) in sync, \(minInSync) needed: nothing commits")
        }
        return problems
    }
}
