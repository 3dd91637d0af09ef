import CoreMetrics
import FlowKit
import Logging
import ZeroMQ

extension CoordinatorCore {
    // MARK: Publishing

    /// Publishes one ENTRIES message; subscribers repair what a full queue drops.
    func publish(_ frames: [[UInt8]], entries: Int) {
        if (try? publishSocket.trySend(Message(parts: frames))) != true { counters.publishDropped.add(entries) }
    }

    /// A subscription message from the XPUB socket: byte 1 subscribe, 0 unsubscribe, then the topic.
    func noteSubscriptions(_ messages: [Message]) {
        for message in messages {
            guard let frame = message.frames.first?.bytes, let kind = frame.first else { continue }
            let topic = Array(frame.dropFirst())
            // Batches, control topics and "everything" are not address subscriptions.
            guard !topic.isEmpty, topic.first != UInt8(ascii: "$"), topic != Array(EntriesMessage.batchTopic.utf8) else { continue }
            if kind == 1 { addressSubscriptions.insert(topic) } else { addressSubscriptions.remove(topic) }
        }
    }

    func heartbeat() {
        let message = HeartbeatMessage(epoch: intake.epoch, head: intake.durableHead, time: WallClock.micros())
        _ = try? publishSocket.trySend(Message(parts: message.frames))
    }

    func publishStatus() async {
        configuration.trace?.flush()
        let now = WallClock.micros()
        let head = intake.durableHead
        let seconds = Double(now &- lastStatus.time) / 1_000_000
        let rate = seconds > 0 ? Double(head - min(head, lastStatus.head)) / seconds : 0
        lastStatus = (now, head)
        for (address, digest) in await replica.takeChangedDigests() {
            if let divergence = membership.compare(address: address, instance: digest, reporter: "coordinator") {
                await raise(divergence)
            }
        }
        let liveness = membership.takeChangesInLiveness(now: now)
        for member in liveness.down {
            let message = "\(member.info.name) (node \(member.id)) has not reported for \(configuration.nodeTimeout); it counts as down"
            logger.warning("\(message)")
            publish(Alarm(kind: .nodeDown, message: message, seq: member.applied))
        }
        for member in liveness.forgotten {
            logger.notice(
                "forgetting a node down for \(configuration.forgetDownNodesAfter)",
                metadata: ["flowkit.node": "\(member.info.name)", "flowkit.node.id": "\(member.id)"]
            )
        }
        for stalled in membership.takeNewStalls(head: head, now: now) {
            counters.stalls.add(1)
            let message = "\(stalled.info.name) has applied nothing for \(configuration.stallTimeout) at seq \(stalled.applied), \(head - min(head, stalled.applied)) behind the head"
            logger.error("STALLED: \(message)")
            publish(Alarm(kind: .nodeStalled, message: message, seq: stalled.applied))
        }
        if let quarantine = unannouncedQuarantine {
            unannouncedQuarantine = nil
            publish(quarantine)
        }
        let status = membership.status(
            epoch: intake.epoch, head: head, firstSeq: firstSeq, entriesPerSecond: rate, quarantined: quarantinedEntries, now: now
        )
        counters.gauges.head.record(Double(head))
        counters.gauges.pendingCommit.record(Double(intake.pending.entries.count))
        counters.gauges.nodesAlive.record(Double(status.nodes.filter(\.alive).count))
        counters.gauges.nodesStalled.record(Double(status.nodes.filter(\.stalled).count))
        counters.gauges.instances.record(Double(await replica.instanceCount))
        _ = try? publishSocket.trySend(Message(parts: ClusterStatusMessage(status: status).frames))
    }

    func status() -> ClusterStatus {
        membership.status(
            epoch: intake.epoch, head: intake.durableHead, firstSeq: firstSeq, entriesPerSecond: 0,
            quarantined: quarantinedEntries, now: WallClock.micros()
        )
    }

    /// Notes entries quarantined at `seqs`, found while recovering.
    func noteQuarantined(_ seqs: [UInt64]) {
        guard !seqs.isEmpty else { return }
        quarantinedEntries += seqs.count
        counters.quarantined.add(seqs.count)
        let listed = seqs.prefix(10).map(String.init).joined(separator: ", ") + (seqs.count > 10 ? ", …" : "")
        let message = "\(seqs.count) log entries are too large for any message (seq \(listed)): every replica skips them; their events are not applied"
        logger.critical("QUARANTINED: \(message)")
        unannouncedQuarantine = Alarm(kind: .entryQuarantined, message: message, seq: seqs.first)
    }

    func raise(_ divergence: Membership.Divergence) async {
        counters.divergences.add(1)
        let message = "replicas diverged at \(divergence.address) after seq \(divergence.seq): "
            + divergence.digests.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        logger.critical("DIVERGENCE: \(message)")
        publish(Alarm(kind: .divergence, message: message, address: divergence.address, seq: divergence.seq, digests: divergence.digests))
    }

    func publish(_ alarm: Alarm) {
        _ = try? publishSocket.trySend(Message(parts: AlarmMessage(alarm: alarm).frames))
    }
}
