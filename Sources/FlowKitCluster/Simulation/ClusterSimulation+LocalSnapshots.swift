/// Each node's local snapshots in a simulation: its disk, which outlives its crashes.
struct SimulatedLocalSnapshots {
    /// A file on a node's disk: a base (every instance the node held), or a delta (the instances
    /// changed since the file it follows).
    struct File {
        let seq: UInt64
        /// The seq of the file it follows; nil for a base.
        let follows: UInt64?
        let instances: [SnapshotChunkMessage.Instance]
    }

    /// Each node's files: the newest base and the deltas after it, oldest first (what
    /// ``SnapshotStore/latestChain()`` reads; saving a base deletes the rest, as the store does).
    var files: [Int: [File]] = [:]
    /// Their own draws, so that taking snapshots leaves the rest of a seed's draws as they were.
    var random: SeededRandom
    /// How many restarts resumed from one, of those how many from a fuzzy copy, and how many
    /// through deltas; how many deltas were saved, and how many saves failed.
    var resumed = 0
    var resumedFuzzy = 0
    var resumedWithDeltas = 0
    var deltasSaved = 0
    var failedSaves = 0

    init(seed: UInt64) {
        random = SeededRandom(seed: seed ^ 0x10CA_15A9_5407)
    }
}

/// Nodes' local snapshots in a simulation, as a node process takes them
/// (``LocalSnapshots``): a base of every instance, then deltas of the instances changed since the
/// file before, as ``LocalSnapshots/Chain`` decides. A node copies its instances a few per tick,
/// with the entries that arrive applied between the slices, as a node process copies a thousand
/// per turn of its loop (``ReplicaSet/StateCopy``); the copy, encoded and read back, is its disk's
/// file, and one save in sixteen fails (a full disk), after which the next is a base. A restarted
/// node resumes from its base and deltas three times in four, and otherwise starts empty, as a
/// node without a data directory does.
extension ClusterSimulation {
    /// A node's tick: its machine's, its effects', and its local snapshot's next slice.
    func tick(_ node: SimulatedNode) {
        node.interpreter.run { $0.tick(now: now) }
        // Effects tick until 6 s after the faults heal (takeovers happen then), then rest.
        if now >= node.lastEffectTicks + 1_000_000, now < activeEnd + 6_000_000 { node.tickEffects(now: now) }
        continueLocalSnapshot(of: node)
        schedule.schedule(.nodeTick(node: node.index, incarnation: node.incarnation), at: now + 50_000)
    }

    /// Starts a copy on one tick in two (50 ms) when entries were applied since the last file, a
    /// base or a delta as the node's chain decides; or takes the next one to eight instances of
    /// the copy under way, and saves it once complete.
    private func continueLocalSnapshot(of node: SimulatedNode) {
        guard let (follows, copy) = node.localCopy else {
            let applied = node.machine.applied
            if applied > (node.localChain.end ?? 0), localSnapshots.random.next() % 2 == 0 {
                node.localCopy = node.localChain.startNext(from: node.replicas, at: applied)
            }
            return
        }
        node.replicas.copy(copy, atMost: 1 + Int(localSnapshots.random.next() % 8))
        guard copy.isDone else { return }
        node.localCopy = nil
        guard !copy.isAbandoned else { return }
        guard localSnapshots.random.next() % 16 != 0 else {
            localSnapshots.failedSaves += 1
            LocalSnapshots.notSaved(node.replicas)
            trace.note(at: now, "n\(node.index): its local snapshot from seq \(copy.start) was not saved (disk full)")
            return
        }
        let instances: [SnapshotChunkMessage.Instance]
        do {
            instances = try SnapshotCodec.decode(SnapshotCodec.encode(copy.states, order: .asHeld).bytes).instances
        } catch {
            history.violations.append("node \(node.index)'s local snapshot did not read back: \(error)")
            return
        }
        let file = SimulatedLocalSnapshots.File(seq: copy.start, follows: follows, instances: instances)
        if let follows {
            guard localSnapshots.files[node.index]?.last?.seq == follows else {
                history.violations.append("node \(node.index)'s delta at seq \(copy.start) follows seq \(follows), not the last file it saved")
                return
            }
            localSnapshots.files[node.index]!.append(file)
            localSnapshots.deltasSaved += 1
        } else {
            localSnapshots.files[node.index] = [file]
        }
        node.localChain.saved(seq: copy.start, records: instances.count, delta: follows != nil)
        trace.note(
            at: now,
            "n\(node.index): local snapshot \(follows.map { "delta after seq \($0)" } ?? "base") from seq \(copy.start), \(instances.count) instances up to \(copy.consistentFrom)"
        )
    }

    /// A node starting again resumes from its local snapshots three times in four, if it saved a
    /// base; otherwise it keeps every change, and its next snapshot is a base.
    func resumeFromLocalSnapshot(_ node: SimulatedNode) {
        node.replicas.trackChanges(everything: true)
        guard let files = localSnapshots.files[node.index], let base = files.first, localSnapshots.random.next() % 4 != 0 else { return }
        let deltas = files.dropFirst().map { (seq: $0.seq, instances: $0.instances) }
        let (instances, chain) = LocalSnapshots.joined(base: (base.seq, base.instances), deltas: deltas)
        do {
            let seq = chain.end ?? 0
            let consistentFrom = try node.interpreter.resume(fromLocalSnapshots: instances, chain: chain)
            node.localChain = chain
            node.lastApplied = seq
            localSnapshots.resumed += 1
            if consistentFrom > seq { localSnapshots.resumedFuzzy += 1 }
            if !deltas.isEmpty { localSnapshots.resumedWithDeltas += 1 }
            trace.note(at: now, "n\(node.index): resumed from its local snapshots at seq \(seq) (\(deltas.count) deltas), its instances up to \(consistentFrom)")
        } catch {
            // As a node process does: it joins as a new node would.
            node.replicas.trackChanges(everything: true)
            trace.note(at: now, "n\(node.index): its local snapshots did not restore: \(error)")
        }
    }
}
