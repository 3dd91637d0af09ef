extension SimulatedCoordinator {
    // MARK: The disk

    /// Asks the disk for a write; returns its id, for the event that completes it.
    func write(_ records: [(seq: UInt64, record: [UInt8])]) -> UInt64 {
        let id = nextWrite
        nextWrite += 1
        writes[id] = SimulatedWrite(records: records, succeeds: !disk.isFull)
        return id
    }

    /// What a leader's log holds from `seq` on, as its sync server reads it: what is durable,
    /// then the writes not synced yet (a replicated leader sends a group while it syncs it).
    func readOffered(from seq: UInt64, maxCount: Int, maxBytes: Int) throws -> [[UInt8]] {
        var records = try disk.log.read(from: seq, maxCount: maxCount, maxBytes: maxBytes)
        var next = max(seq, disk.log.lastSeq + 1)
        var bytes = records.reduce(0) { $0 + $1.count }
        for id in writes.keys.sorted() {
            for (recordSeq, record) in writes[id]!.records where recordSeq >= next {
                guard recordSeq == next, records.count < maxCount, bytes + record.count <= maxBytes || records.isEmpty else { return records }
                records.append(record)
                bytes += record.count
                next += 1
            }
        }
        return records
    }

    /// The write's sync completed: it reaches the log, unless the disk refused it, or it does not
    /// continue the log (a write after a refused one). `nil`: it was landed already.
    func land(_ write: UInt64) -> Bool? {
        guard let pending = writes.removeValue(forKey: write) else { return nil }
        guard pending.succeeds else { return false }
        // (A group of duplicates' acknowledgements writes nothing.)
        if let first = pending.records.first?.seq, first != disk.log.lastSeq + 1 { return false }
        try? disk.log.append(pending.records)
        try? disk.log.commit()
        return true
    }

    /// Every write asked for lands now, in order.
    func landWrites() {
        for id in writes.keys.sorted() { _ = land(id) }
    }
}
