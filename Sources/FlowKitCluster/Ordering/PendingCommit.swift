/// What the coordinator has ordered and waits to make durable: the next group commit.
struct PendingCommit {
    var records: [(seq: UInt64, record: [UInt8])] = []
    var entries: [Entry] = []
    /// Acknowledgements to send once the group is durable.
    var acks = PendingAcks()
    /// What was ordered for nodes that learn it from the entries (``NodeInfo/ackOrdered``): sent
    /// only as refusals, should the log refuse the group.
    var unacknowledged = PendingAcks()

    var isEmpty: Bool { entries.isEmpty && acks.isEmpty }
    var lastSeq: UInt64? { entries.last?.seq }

    /// The commit point at which everything this group tells may be told: its own entries, and
    /// the duplicates it acknowledges of entries ordered earlier but not yet committed.
    var visibleAt: UInt64 {
        max(lastSeq ?? 0, acks.byPeer.lazy.flatMap(\.acks).map(\.seq).max() ?? 0)
    }

    mutating func add(_ entry: Entry) {
        records.append((entry.seq, entry.encoded))
        entries.append(entry)
    }
}

/// Acknowledgements to send, gathered per submitting peer and the epoch that ordered them (an ACK
/// names one), in arrival order: one ACK message each.
struct PendingAcks {
    private(set) var byPeer: [(peer: RouterEnvelope, epoch: UInt32, acks: [AckMessage.Ack])] = []

    var isEmpty: Bool { byPeer.isEmpty }

    mutating func add(_ ack: AckMessage.Ack, to peer: RouterEnvelope, epoch: UInt32) {
        if let index = byPeer.lastIndex(where: { $0.peer.identity == peer.identity && $0.epoch == epoch }) {
            byPeer[index].acks.append(ack)
        } else {
            byPeer.append((peer, epoch, [ack]))
        }
    }
}
