/// What the coordinator has ordered and waits to make durable: the next group commit.
struct PendingCommit {
    var records: [(seq: UInt64, record: [UInt8])] = []
    var entries: [Entry] = []
    /// Acknowledgements to send once the group is durable, per submitting peer, in arrival order.
    var acks: [(peer: RouterEnvelope, acks: [AckMessage.Ack])] = []

    var isEmpty: Bool { entries.isEmpty && acks.isEmpty }
    var lastSeq: UInt64? { entries.last?.seq }

    mutating func add(_ entry: Entry) {
        records.append((entry.seq, entry.encoded))
        entries.append(entry)
    }

    mutating func ack(_ ack: AckMessage.Ack, to peer: RouterEnvelope) {
        if let index = acks.lastIndex(where: { $0.peer.identity == peer.identity }) {
            acks[index].acks.append(ack)
        } else {
            acks.append((peer, [ack]))
        }
    }
}

/// Runs of consecutive entries of one instance: one ENTRIES message each.
func entryRuns(_ entries: [Entry], records: [(seq: UInt64, record: [UInt8])]) -> [(address: String, records: [UInt8])] {
    var runs: [(address: String, records: [UInt8])] = []
    var writer = ByteWriter(capacity: 256)
    var current: String?
    for (entry, record) in zip(entries, records) {
        if entry.address != current {
            if let current { runs.append((current, writer.bytes)) }
            current = entry.address
            writer = ByteWriter(capacity: 256)
        }
        writer.writeLengthPrefixed(record.record)
    }
    if let current { runs.append((current, writer.bytes)) }
    return runs
}
