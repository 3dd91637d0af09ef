import FlowKitCore
import Logging

extension Coordinator {
    /// Starts ordering in `record`'s epoch, from everything the local log holds, alone or as the
    /// leader of `group`: one pass over what the replica has not applied teaches the duplicate
    /// table those entries and brings the replica up to the commit point (alone: the log's end;
    /// replicated: what the copy knew committed, the rest commits once the group holds it). The
    /// replica's sessions and the log's epochs know the rest, so the time it takes does not grow
    /// with the log. Then the core takes over.
    ///
    /// - Parameter deposed: The leader this coordinator followed last: it lags from the start.
    func lead(_ record: LeaderRecord, in parts: CoordinatorParts, group: ReplicatedGroup?, deposed: String? = nil) async throws -> CoordinatorCore {
        await group?.standby.follow(nil)
        let (firstSeq, lastSeq, epochs) = try await parts.writer.run { log in (log.firstSeq, log.lastSeq, log.epochs) }
        let committed = await group?.standby.committed ?? lastSeq
        // What the replica remembers of each session, then every entry it has not applied.
        var sequencer = Sequencer(epoch: record.epoch, durableHead: lastSeq, dedup: await parts.replica.sessions, history: epochs)
        let from = await parts.replica.firstUnlearned(inLogFrom: firstSeq)
        let (replayed, quarantined, fences) = try await CoordinatorStorage.recover(
            &sequencer, replica: parts.replica, from: from, committed: committed, quarantine: parts.quarantine
        ) { [writer = parts.writer] seq in
            try await writer.run { log in seq > log.lastSeq ? [] : try log.read(from: seq, maxCount: 10_000, maxBytes: 16 << 20) }
        }
        if lastSeq > 0 {
            logger.info(
                "recovered the log",
                metadata: [
                    "flowkit.first": "\(firstSeq)", "flowkit.last": "\(lastSeq)", "flowkit.read_from": "\(from)", "flowkit.replayed": "\(replayed)",
                ]
            )
        }
        var progress: ReplicationProgress?
        if let group {
            let replication = group.replication
            let view = try? await group.etcd.read().0
            progress = ReplicationProgress(
                leader: replication.id, members: Array(replication.coordinators.keys), eligible: view?.eligible,
                deposed: deposed,
                written: lastSeq, committed: committed, minInSync: replication.minInSync,
                lagTimeout: UInt64(replication.lagTimeout.microseconds), now: WallClock.micros()
            )
        }
        let machine = CoordinatorMachine(
            configuration: configuration, registry: registry, sequencer: sequencer, firstSeq: firstSeq,
            now: WallClock.micros(), replication: progress, fences: fences
        )
        logger.notice(
            "leading",
            metadata: ["flowkit.epoch": "\(record.epoch)", "flowkit.log_end": "\(lastSeq)", "flowkit.committed": "\(committed)"]
        )
        group?.feed.lead(epoch: record.epoch, written: lastSeq, committed: committed)
        let core = CoordinatorCore(
            machine: machine, logger: logger, counters: parts.counters, writer: parts.writer,
            submitSocket: parts.sockets.submit, publishSocket: parts.sockets.publish, replica: parts.replica,
            replication: group?.replication(for: record) { [self] reason in fail(reason) }
        )
        await core.noteQuarantined(quarantined)
        return core
    }
}
