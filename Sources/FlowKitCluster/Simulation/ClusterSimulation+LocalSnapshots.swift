/// Each node's latest local snapshot in a simulation: its disk, which outlives its crashes.
struct SimulatedLocalSnapshots {
    var saved: [Int: (seq: UInt64, instances: [SnapshotChunkMessage.Instance])] = [:]
    /// Their own draws, so that taking snapshots leaves the rest of a seed's draws as they were.
    var random: SeededRandom
    /// How many restarts resumed from one, and of those how many from a fuzzy copy.
    var resumed = 0
    var resumedFuzzy = 0

    init(seed: UInt64) {
        random = SeededRandom(seed: seed ^ 0x10CA_15A9_5407)
    }
}

/// Nodes' local snapshots in a simulation. A node copies its instances a few per tick, with the
/// entries that arrive applied between the slices, as a node process copies a thousand per turn
/// of its loop (``ReplicaSet/StateCopy``); the copy, encoded and read back, is its disk's
/// snapshot. A restarted node resumes from it three times in four, and otherwise starts empty, as a
/// node without a data directory does. Bases only: the chain of deltas has its own randomized
/// test.
extension ClusterSimulation {
    /// A node's tick: its machine's, its effects', and its local snapshot's next slice.
    func tick(_ node: SimulatedNode) {
        node.interpreter.run { $0.tick(now: now) }
        // Effects tick until 6 s after the faults heal (takeovers happen then), then rest.
        if now >= node.lastEffectTicks + 1_000_000, now < activeEnd + 6_000_000 { node.tickEffects(now: now) }
        continueLocalSnapshot(of: node)
        schedule.schedule(.nodeTick(node: node.index, incarnation: node.incarnation), at: now + 50_000)
    }

    /// Starts a copy about every half second, when entries were applied since the last; or takes
    /// the next one to three instances of the copy under way, and saves it once complete.
    private func continueLocalSnapshot(of node: SimulatedNode) {
        guard let copy = node.localCopy else {
            let applied = node.machine.applied
            if applied > (localSnapshots.saved[node.index]?.seq ?? 0), localSnapshots.random.next() % 10 == 0 {
                node.localCopy = node.replicas.startCopy(at: applied, everything: true)
            }
            return
        }
        node.replicas.copy(copy, atMost: 1 + Int(localSnapshots.random.next() % 3))
        guard copy.isDone else { return }
        node.localCopy = nil
        guard !copy.isAbandoned else { return }
        do {
            let instances = try SnapshotCodec.decode(SnapshotCodec.encode(copy.states, order: .asHeld).bytes).instances
            localSnapshots.saved[node.index] = (copy.start, instances)
            trace.note(at: now, "n\(node.index): local snapshot from seq \(copy.start), its instances up to \(copy.consistentFrom)")
        } catch {
            history.violations.append("node \(node.index)'s local snapshot did not read back: \(error)")
        }
    }

    /// A node starting again resumes from its local snapshot three times in four, if it saved one.
    func resumeFromLocalSnapshot(_ node: SimulatedNode) {
        guard let (seq, instances) = localSnapshots.saved[node.index], localSnapshots.random.next() % 4 != 0 else { return }
        do {
            let consistentFrom = try node.interpreter.resume(fromLocalSnapshot: instances, seq: seq).consistentFrom
            node.lastApplied = seq
            localSnapshots.resumed += 1
            if consistentFrom > seq { localSnapshots.resumedFuzzy += 1 }
            trace.note(at: now, "n\(node.index): resumed from its local snapshot at seq \(seq), its instances up to \(consistentFrom)")
        } catch {
            // As a node process does: it joins as a new node would.
            trace.note(at: now, "n\(node.index): its local snapshot did not restore: \(error)")
        }
    }
}
