extension SimulationChecks {
    /// Replicated: everything the leader wrote is committed, and every coordinator's log is the
    /// leader's.
    func coordinatorsAgree(on log: [Entry]) -> [SimulationFailure] {
        guard simulation.isReplicated, let leader = simulation.finalLeader else { return [] }
        var failures: [SimulationFailure] = []
        if leader.committed.head != UInt64(log.count) {
            failures.append(SimulationFailure(check: "everything written is committed", detail: "\(leader.id) leads with \(log.count) entries, committed to \(leader.committed.head)"))
        }
        for case let coordinator? in simulation.coordinators where coordinator !== leader {
            // What it retains: compacted, or installed from a snapshot, it holds the rest no more.
            guard let copy = try? Self.readLog(coordinator.disk) else { continue }
            let first = Int(coordinator.disk.log.firstSeq)
            let leaders = Array(log.dropFirst(first - 1))
            guard copy != leaders else { continue }
            let differs = Array(zip(copy, leaders)).firstIndex { $0 != $1 }.map { "from seq \($0 + first)" } ?? "in length"
            failures.append(
                SimulationFailure(check: "every coordinator holds the log", detail: "\(coordinator.id) holds \(copy.count) entries, the leader \(leader.id) \(log.count); they differ \(differs)")
            )
        }
        // A leader past its lease is heard by no one: what it wrote then, no leader keeps.
        for entry in log where simulation.history.fencedWrites[entry.seq] == entry {
            failures.append(
                SimulationFailure(check: "a leader past its lease orders nothing", detail: "seq \(entry.seq) of epoch \(entry.epoch), written by a leader whose lease had run out, is in the log")
            )
            break
        }
        // What each one compacted away was committed there, so it is the log's too: a copy that
        // differed and was compacted before the end is caught here.
        for (index, disk) in simulation.disks.enumerated() {
            let differs = disk.archive.keys.sorted().first { seq in
                seq <= UInt64(log.count) && (try? Entry(decoding: disk.archive[seq]!)) != log[Int(seq) - 1]
            }
            guard let differs else { continue }
            failures.append(
                SimulationFailure(check: "every coordinator holds the log", detail: "c\(index) compacted seq \(differs), which differs from the log's")
            )
        }
        return failures
    }

    /// The whole log: what `disk` no longer holds (compacted, or skipped by installing a
    /// snapshot) from any coordinator's archive or retained log (committed, so the same on every
    /// one), then what `disk` retains.
    static func history(_ disk: SimulatedDisk, others: [SimulatedDisk]) throws -> [Entry] {
        var entries: [Entry] = []
        for seq in 1..<max(1, disk.log.firstSeq) {
            let record = others.lazy.compactMap { other in
                other.archive[seq] ?? (seq >= other.log.firstSeq ? try? other.log.read(from: seq, maxCount: 1, maxBytes: .max).first : nil)
            }.first
            guard let record else {
                throw ProtocolError(.notFound, "seq \(seq) is neither in the log nor in any compacted archive nor in another coordinator's log")
            }
            entries.append(try Entry(decoding: record))
        }
        return entries + (try readLog(disk))
    }

    /// What `disk`'s log retains.
    static func readLog(_ disk: SimulatedDisk) throws -> [Entry] {
        let log = disk.log
        var entries: [Entry] = []
        var seq = log.firstSeq
        while seq <= log.lastSeq {
            let records = try log.read(from: seq, maxCount: 10_000, maxBytes: .max)
            guard !records.isEmpty else { break }
            for record in records { entries.append(try Entry(decoding: record)) }
            seq = (entries.last?.seq ?? seq) + 1
        }
        return entries
    }
}
