import ZeroMQ

/// What the coordinator publishes and to whom it matters: committed entries packed into ENTRIES
/// under the batch topic, and also under their address while someone subscribes to one (the XPUB
/// socket says who does); HEARTBEATs and alarms. A part of ``CoordinatorMachine``.
struct Publication {
    /// Address prefixes someone subscribes to (from the XPUB socket's subscription messages): while
    /// there are any, runs of one instance are published under their address as well as batches.
    private var addressSubscriptions: Set<[UInt8]> = []
    /// Packs published entries: at most 4,096 entries or 1 MiB per message, a larger entry alone.
    private let packer = RecordPacker(maxCount: 4_096, maxBytes: 1 << 20)

    /// Subscription messages from the XPUB socket: byte 1 subscribe, 0 unsubscribe, then the topic.
    mutating func noteSubscriptions(_ messages: [Message]) {
        for message in messages {
            guard let frame = message.frames.first?.bytes, let kind = frame.first else { continue }
            let topic = Array(frame.dropFirst())
            // Batches, control topics and "everything" are not address subscriptions.
            guard !topic.isEmpty, topic.first != UInt8(ascii: "$"), topic != Array(EntriesMessage.batchTopic.utf8) else { continue }
            if kind == 1 { addressSubscriptions.insert(topic) } else { addressSubscriptions.remove(topic) }
        }
    }

    /// The ENTRIES messages that publish a committed group, with how many entries each carries.
    func entries(of group: PendingCommit, epoch: UInt32) -> [(frames: [[UInt8]], entries: Int)] {
        var messages: [(frames: [[UInt8]], entries: Int)] = []
        for frame in packer.pack(group.records.lazy.map(\.record)) {
            messages.append((EntriesMessage.frames(address: EntriesMessage.batchTopic, epoch: epoch, records: frame.frame), frame.count))
        }
        if !addressSubscriptions.isEmpty {
            for run in entryRuns(group.entries, records: group.records, packer: packer) {
                messages.append((EntriesMessage.frames(address: run.address, epoch: epoch, records: run.records), run.count))
            }
        }
        return messages
    }
}
