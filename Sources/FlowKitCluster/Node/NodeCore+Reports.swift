import CoreMetrics
import FlowKitCore
import Foundation
import Logging
import ZeroMQ

extension NodeCore {
    // MARK: Reports and digests

    /// Starts a round of hashing the instances changed since their last digest, for the next
    /// report (``ReplicaSet/startDigestRound(now:spreadOver:)``), spread over most of the report
    /// interval.
    func hashChangedInstances() {
        let now = WallClock.micros()
        replicas.startDigestRound(now: now, spreadOver: UInt64(configuration.reportInterval.microseconds) * 4 / 5)
        hashNextSlice()
    }

    /// Hashes the round's next slice on the background thread: the loop thread only copies their
    /// states and folds the digests back in, a slice at a time, so no turn of the loop holds up the
    /// messages for long. A slice not due yet is hashed when it is. None while the node is far
    /// behind (its digests would describe states long past).
    func hashNextSlice() {
        guard machine.follower.knownHead - min(machine.follower.knownHead, machine.follower.applied) <= Self.catchingUpLag else { return }
        let now = WallClock.micros()
        let loop = sockets.client.loop
        let jobs = replicas.nextDigestSlice(now: now)
        guard !jobs.isEmpty else {
            if let due = replicas.nextDigestSliceDue, due > now, !digestSliceScheduled {
                digestSliceScheduled = true
                Task(executorPreference: loop) { [weak self] in
                    try? await Task.sleep(for: .microseconds(due - now))
                    await self?.digestSliceIsDue()
                }
            }
            return
        }
        BackgroundWork.idle.start { [weak self] in
            let (results, micros) = ReplicaSet.hash(jobs)
            // Back on the loop's thread, where the node's work runs: a task without the preference
            // ran the node on a pool thread, and the loop's messages waited for it.
            Task(executorPreference: loop) { await self?.finishHashing(results, micros: micros) }
        }
    }

    private func digestSliceIsDue() {
        digestSliceScheduled = false
        hashNextSlice()
    }

    func finishHashing(_ results: [ReplicaSet.DigestResult], micros: UInt64) {
        replicas.finishDigestJobs(results, hashingMicros: micros)
        hashNextSlice()
    }

    func updateGauges() {
        let gauges = counters.gauges
        gauges.applied.record(Double(machine.follower.applied))
        gauges.head.record(Double(machine.follower.knownHead))
        gauges.lag.record(Double(machine.follower.knownHead - min(machine.follower.knownHead, machine.follower.applied)))
        gauges.runningEffects.record(Double(replicas.runningEffects))
        gauges.pendingSubmissions.record(Double(machine.pendingSubmissions))
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
        let summary = NodeReport(
            name: configuration.name,
            digest: replicas.lastCombinedDigest.description,
            digests: [:],
            instances: replicas.count,
            runningEffects: replicas.runningEffects,
            effectsLost: 0,
            pendingSubmissions: machine.pendingSubmissions,
            connected: isConnected,
            digestSeq: !catchingUp && replicas.digestsAreCurrent ? machine.follower.applied : 0
        )
        let (node, applied) = (configuration.id, machine.follower.applied)
        // Encoded on the task pool: the summary is JSON, and the report is the node's sign of life,
        // which must not wait behind the background thread's hashing on a busy machine.
        let socket = submitSocket
        Task.detached {
            let message = NodeReportMessage(node: node, applied: applied, time: now, report: summary, digests: ReportedDigest.list(changed))
            _ = try? socket.trySend(Message(parts: message.frames))
        }
    }
}
