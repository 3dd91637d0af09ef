import CoreMetrics
import FlowKit
import Foundation
import Logging
import ZeroMQ

extension NodeCore {
    // MARK: Timers

    /// Retries, repairs, timeouts and reports; run every tick.
    func tick() {
        let now = WallClock.micros()
        flushSubmissions()
        perform(follower.tick(now: now))
        for (peer, request, error) in submissions.expireWaiters(now: now, timeout: configuration.emitTimeout) {
            reply(.error(request: request, error), to: peer)
        }
        perform(waiters.tick(applied: follower.applied, now: now))
        saveLocalSnapshotIfDue(now: now)
        noteProgress(now: now)
        hashChangedInstances()
        if now - lastReport >= UInt64(configuration.reportInterval.microseconds) {
            lastReport = now
            sendReport(now: now)
            configuration.trace?.flush()
        }
        perform(link.tick(now: now))
    }

    /// Hashes the instances changed since their last digest, on the background thread: the loop
    /// thread only copies their states. One batch at a time, within the digest budget; none while
    /// the node is far behind (its digests would describe states long past).
    func hashChangedInstances() {
        guard !hashing, follower.knownHead - min(follower.knownHead, follower.applied) <= Self.catchingUpLag else { return }
        let jobs = replicas.takeDigestJobs()
        guard !jobs.isEmpty else { return }
        hashing = true
        BackgroundWork.shared.start { [weak self] in
            let (results, micros) = ReplicaSet.hash(jobs)
            Task { await self?.finishHashing(results, micros: micros) }
        }
    }

    func finishHashing(_ results: [ReplicaSet.DigestResult], micros: UInt64) {
        hashing = false
        replicas.finishDigestJobs(results, hashingMicros: micros)
    }

    /// Logs, once, a node that has applied nothing for the stall timeout while behind the head:
    /// an entry it cannot get, or cannot apply, would otherwise hold it back in silence.
    func noteProgress(now: UInt64) {
        let applied = follower.applied
        if applied != progress.applied || applied >= follower.knownHead {
            if progress.logged {
                logger.notice("applying again", metadata: ["flowkit.applied": "\(applied)", "flowkit.head": "\(follower.knownHead)"])
            }
            progress = (applied, now, false)
        } else if !progress.logged, now - min(now, progress.at) >= UInt64(configuration.stallTimeout.microseconds) {
            progress.logged = true
            logger.error(
                "stalled: nothing applied for \(configuration.stallTimeout) while behind the head; waiting for seq \(applied + 1)",
                metadata: [
                    "flowkit.applied": "\(applied)", "flowkit.head": "\(follower.knownHead)",
                    "flowkit.waiting": "\(follower.waitingCount)", "flowkit.joining": "\(follower.isJoining)",
                ]
            )
        }
    }

    func updateGauges() {
        let gauges = counters.gauges
        gauges.applied.record(Double(follower.applied))
        gauges.head.record(Double(follower.knownHead))
        gauges.lag.record(Double(follower.knownHead - min(follower.knownHead, follower.applied)))
        gauges.runningEffects.record(Double(replicas.runningEffects))
        gauges.pendingSubmissions.record(Double(submissions.count))
        gauges.instances.record(Double(replicas.count))
    }

    /// A node this far behind the head hashes nothing for its reports until it has caught up: its
    /// digests would describe states the coordinator passed long ago, and the hashing would slow
    /// the catching up (a twentieth of a replay).
    static let catchingUpLag: UInt64 = 10_000

    func sendReport(now: UInt64) {
        updateGauges()
        let catchingUp = follower.knownHead - min(follower.knownHead, follower.applied) > Self.catchingUpLag
        // Idle at the head, nothing competes with hashing: bring every digest up to date now, so
        // the report describes the state exactly (digestSeq) instead of catching up at the budget's
        // pace for seconds after a load stops.
        let idle = follower.applied == lastReportedApplied && follower.applied >= follower.knownHead
        lastReportedApplied = follower.applied
        if idle { _ = replicas.combinedDigest(exact: true) }
        let changed = catchingUp ? [:] : replicas.takeChanged(hashing: false)
        var digests: [String: InstanceDigest] = [:]
        for (address, digest) in changed { digests[address.description] = digest }
        let report = NodeReport(
            name: configuration.name,
            digest: replicas.lastCombinedDigest.description,
            digests: digests,
            instances: replicas.count,
            runningEffects: replicas.runningEffects,
            effectsLost: 0,
            pendingSubmissions: submissions.count,
            connected: isConnected,
            digestSeq: !catchingUp && replicas.digestsAreCurrent ? follower.applied : 0
        )
        let message = NodeReportMessage(node: configuration.id, applied: follower.applied, time: now, report: report)
        // Encoding a thousand digests as JSON takes milliseconds: not on the loop thread.
        let socket = sockets.submit
        BackgroundWork.shared.start { _ = try? socket.trySend(Message(parts: message.frames)) }
    }
}
