import Logging

extension CoordinatorMachine {
    // MARK: Replication

    /// A standby's FETCH: note how far it holds the log, and decide the answer from this log.
    ///
    /// - Throws: If the standby follows another term than this coordinator's (it heard of a later
    ///   leader, or has not heard of this one yet): it asks the election service again.
    mutating func fetch(_ request: FetchRequest, firstSeq: UInt64, now: UInt64) throws -> (FetchAnswer, [Action]) {
        guard request.epoch == intake.epoch else {
            throw ProtocolError(.coordinatorUnavailable, "\(request.id) follows the leader of epoch \(request.epoch); this coordinator leads epoch \(intake.epoch)")
        }
        let answer = FetchAnswer(request, written: offeredHead, firstSeq: firstSeq, epochs: intake.sequencer.epochs(through: offeredHead))
        guard replication != nil else { return (answer, []) }
        // Only a copy that agrees with this log counts for the commit point.
        switch answer {
        case .entries, .wait:
            return (answer, confirm(request.id, durable: request.durable, now: now))
        case .truncate, .behindRetention:
            return (answer, [])
        }
    }

    /// Standby `id`'s log agrees with this one and is durable up to `durable` (its FETCH, checked
    /// here or against the sync server's ``ReplicationFeed``): it counts for the commit point.
    mutating func confirm(_ id: String, durable: UInt64, now: UInt64) -> [Action] {
        guard replication != nil else { return [] }
        if let trace = configuration.trace {
            let before = replication!.standbys[id]?.durable ?? durable
            if durable > before {
                for seq in trace.sampled(in: before + 1...durable) { observations.hop(seq, .leaderConfirmed, at: now) }
            }
        }
        // Never past what this leader has sent (its own sync may still be under way).
        return replication!.fetched(by: id, durable: min(durable, offeredHead), now: now) ? releaseCommitted() : []
    }

    /// Time passed: propose changes to the in-sync set.
    mutating func tickReplication(now: UInt64) -> [Action] {
        guard replication != nil else { return [] }
        return replication!.tick(now: now).map { action in
            switch action {
            case .proposeEligible(let set): .proposeEligible(set)
            }
        }
    }

    /// The election service holds `set` as the coordinators eligible to lead.
    mutating func eligibleWritten(_ set: Set<String>, now: UInt64) -> [Action] {
        guard replication != nil else { return [] }
        let wasBelow = replication!.isBelowMinimum
        let moved = replication!.eligibleWritten(set)
        observations.log(.notice, "in-sync coordinators: \(set.sorted().joined(separator: ", "))")
        if replication!.isBelowMinimum, !wasBelow {
            observations.log(.error, 
                "too few coordinators in sync: nothing commits until one catches up",
                ["flowkit.in_sync": "\(set.count)", "flowkit.needed": "\(replication!.minInSync)"]
            )
        }
        return moved ? releaseCommitted() : []
    }

    /// Writing the in-sync set failed: the old one stands.
    mutating func eligibleWriteFailed() {
        replication?.eligibleWriteFailed()
    }
}
