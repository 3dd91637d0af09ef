import Logging
import Synchronization
import ZeroMQ

extension ClusterSimulation {
    // MARK: Carrying out the machines' actions

    /// What hashing one instance costs a node's hashing budget (simulated µs): nothing in a third
    /// of the seeds; in the others as if the states were large, so that the budget runs out under
    /// load, the digests lag, and settle once the load stops (``DigestBook/settle(held:)``).
    var hashingMicrosPerInstance: UInt64 { [0, 2_000, 40_000][Int(seed % 3)] }

    /// A simulated node's hashing or wake-up (``SimulatedNodeIO``).
    func carryOut(_ work: SimulatedNodeWork, on node: SimulatedNode) {
        switch work {
        case .hashed(let results): node.interpreter.hashed(results, micros: UInt64(results.count) * hashingMicrosPerInstance)
        case .wake: node.interpreter.wake()
        }
    }

    /// A simulated coordinator's work off its ordering path (``SimulatedCoordinatorIO``).
    func carryOut(_ work: SimulatedCoordinatorWork, on coordinator: SimulatedCoordinator) async {
        switch work {
        case .replicate(let entries):
            if coordinator.isReplicated {
                await coordinator.applyCommitted(through: entries.last?.seq ?? 0)
            } else {
                await coordinator.replica.applyNow(entries)
            }
        case .decodeReport(let body, let peer):
            coordinator.interpreter?.decoded(Result { try NodeReportMessage(frames: body) }, from: peer)
        case .diverged(let divergences):
            history.divergences += divergences.map { divergence in
                let digests = divergence.digests.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                return "\(divergence.address) after seq \(divergence.seq): \(digests)"
            }
            coordinator.interpreter?.diverged(divergences)
        case .answerHeldFetches:
            guard coordinator.machine != nil else { return }
            recheckHeldFetches(coordinator)
        case .exit(let reason):
            trace.note(at: now, "\(coordinator.id) exits: \(reason)")
            history.faults.append("\(Double(now) / 1_000_000) s: \(coordinator.id) exits (\(reason)); restarted 1 s later")
            crashCoordinator(coordinator.index)
            schedule.schedule(.fault(.restartCoordinator(coordinator.index)), at: now + 1_000_000)
        }
    }

    /// When a write asked of `disk` now is synced: one writer, syncs finish in the order asked.
    func syncDone(_ disk: SimulatedDisk) -> UInt64 {
        // One sync in ten is slow, as a real disk's tail is: 10 to 40 times the usual.
        let most = random.next() % 10 == 0 ? options.maxSyncMicros * UInt64.random(in: 10...40, using: &random) : options.maxSyncMicros
        let done = max(now + UInt64.random(in: 100...most, using: &random), disk.lastSyncDone + 1)
        disk.lastSyncDone = done
        return done
    }

    // MARK: Injected bugs at the coordinator's door

    /// ``InjectedBug/noFencing``: a SUBMIT's effects' submissions lose their ownership terms, so
    /// the coordinator takes them as clients' (never fenced).
    func withoutTerms(_ message: Message) -> Message {
        guard let (peer, body) = RouterEnvelope.split(message), let first = body.first,
            (try? WireHeader.read(first, expecting: .submit)) != nil, var submit = try? SubmitMessage(frames: body)
        else { return message }
        for index in submit.submissions.indices { submit.submissions[index].term = 0 }
        return Message(parts: [peer.identity] + submit.frames)
    }

    func asFromItsOrigin(_ message: Message) -> Message {
        guard let (_, body) = RouterEnvelope.split(message), let first = body.first,
            (try? WireHeader.read(first, expecting: .submit)) != nil, let submit = try? SubmitMessage(frames: body),
            let node = nodes.indices.contains(Int(submit.origin) - 1) ? nodes[Int(submit.origin) - 1] : nil
        else { return message }
        return Message(parts: [node.identity] + body)
    }
}
