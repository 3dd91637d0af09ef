import CoreMetrics
import FlowKit
import Foundation
import Logging
import ZeroMQ

extension NodeCore {
    // MARK: Reports and digests

    /// Hashes the instances changed since their last digest, on the background thread, for the
    /// next report: the loop thread only copies their states. One batch at a time, within the
    /// digest budget; none while the node is far behind (its digests would describe states long
    /// past).
    func hashChangedInstances() {
        guard !hashing, machine.follower.knownHead - min(machine.follower.knownHead, machine.follower.applied) <= Self.catchingUpLag else { return }
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

    func updateGauges() {
        let gauges = counters.gauges
        gauges.applied.record(Double(machine.follower.applied))
        gauges.head.record(Double(machine.follower.knownHead))
        gauges.lag.record(Double(machine.follower.knownHead - min(machine.follower.knownHead, machine.follower.applied)))
        gauges.runningEffects.record(Double(replicas.runningEffects))
        gauges.pendingSubmissions.record(Double(machine.submissions.count))
        gauges.instances.record(Double(replicas.count))
    }

    /// A node this far behind the head hashes nothing for its reports until it has caught up: its
    /// digests would describe states the coordinator passed long ago, and the hashing would slow
    /// the catching up (a twentieth of a replay).
    static let catchingUpLag: UInt64 = 10_000

    func sendReport(now: UInt64) {
        updateGauges()
        let catchingUp = machine.follower.knownHead - min(machine.follower.knownHead, machine.follower.applied) > Self.catchingUpLag
        // Idle at the head, nothing competes with hashing: bring every digest up to date now, so
        // the report describes the state exactly (digestSeq) instead of catching up at the budget's
        // pace for seconds after a load stops.
        let idle = machine.follower.applied == lastReportedApplied && machine.follower.applied >= machine.follower.knownHead
        lastReportedApplied = machine.follower.applied
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
            pendingSubmissions: machine.submissions.count,
            connected: isConnected,
            digestSeq: !catchingUp && replicas.digestsAreCurrent ? machine.follower.applied : 0
        )
        let message = NodeReportMessage(node: configuration.id, applied: machine.follower.applied, time: now, report: report)
        // Encoding a thousand digests as JSON takes milliseconds: not on the loop thread.
        let socket = submitSocket
        BackgroundWork.shared.start { _ = try? socket.trySend(Message(parts: message.frames)) }
    }
}
