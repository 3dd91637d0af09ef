import FlowKitCore

/// A coordinator snapshot's bytes: the records of a SNAPSHOT_CHUNK body, every instance in one,
/// then (when there are any) the sessions its duplicate table remembers, as a SNAPSHOT_CHUNK's
/// sessions frame, its length and the mark `FKSS` last. A snapshot written before sessions were
/// kept ends with a record, which never ends with that mark and a length that fits.
enum SnapshotCodec {
    static let sessionsMark: [UInt8] = Array("FKSS".utf8)

    static func encode(_ instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered] = []) -> [UInt8] {
        var trailer = ByteWriter(capacity: 0)
        append(sessions, to: &trailer)
        return SnapshotChunkMessage.recordsFrame(instances) + trailer.bytes
    }

    /// In what order a snapshot's records lie.
    enum Order: Sendable {
        /// By address: the bytes depend on the states alone, whoever holds them and how. What a
        /// coordinator saves, serves to joining nodes and a standby installs.
        case byAddress
        /// As the process holds them, the instances in use first: for what only the process that
        /// wrote it reads back (a node's local snapshot). Sorting a million addresses was two fifths
        /// of such a snapshot's CPU.
        case asHeld
    }

    /// Every instance's state at one moment (``ReplicaSet/exportStateJobs()``) as a snapshot's
    /// bytes, in `order`, and how many instances they hold; an instance whose state does not
    /// encode is left out.
    ///
    /// Written straight into the bytes: each instance in use is encoded into a record, and a record
    /// at rest, which already holds a record's parts, is copied from its chunk when its turn comes.
    /// Before, a value was made of every instance (a job, then an instance with its address and
    /// state, then the record): in a coordinator's snapshot of a million, on the background thread,
    /// most of the time went to those allocations and the pages they touched.
    ///
    /// `check` is called every 4,096 instances, the address sort's steps included, to give up by
    /// throwing (``BackgroundWork/Abandonment/check()``) and to pace the work (``SnapshotDutyCycle``).
    static func encode(
        _ export: ReplicaSet.StateExport, sessions: [DedupTable.Remembered] = [], order: Order = .byAddress,
        checking check: () throws -> Void
    ) rethrows -> (bytes: [UInt8], count: Int) {
        let encoder = ReplicaSet.stateEncoder()
        var live = ByteWriter(capacity: export.live.count * 64)
        // Where each encoded record ends in `live`.
        var liveEnds: [Int] = []
        liveEnds.reserveCapacity(export.live.count)
        for (done, job) in export.live.enumerated() {
            if done & 4_095 == 0 { try check() }
            guard let state = try? job.encode(encoder) else { continue }
            SnapshotChunkMessage.writeRecord(address: job.address.utf8, lastSeq: job.lastSeq, stateVersion: job.stateVersion, into: &live) { writer in
                job.ownership.encode(into: &writer)
                writer.write(contentsOf: state)
            }
            liveEnds.append(live.bytes.count)
        }
        let liveRecords = live.bytes
        func liveRecord(_ index: Int) -> Range<Int> { (index == 0 ? 0 : liveEnds[index - 1])..<liveEnds[index] }

        var resting: [(chunk: Int, offset: Int)] = []
        resting.reserveCapacity(export.resting.count)
        // The records' bytes: the live ones, and each at rest as a record (its length, the address's, the last seq, its version) at most.
        var capacity = liveRecords.count
        export.resting.forEachOffset { chunk, offset in
            resting.append((chunk, offset))
            capacity += export.resting.withRecord(chunk: chunk, offset: offset) { $0.count + $2.count + $3.count + 17 }
        }
        try check()
        let count = liveEnds.count + resting.count
        let sorted = order == .asHeld ? nil : try utf8Order(count: count, checking: check) { position, bytes in
            guard position >= liveEnds.count else {
                let record = liveRecord(position)
                let length = Int(liveRecords[record.lowerBound + 4]) << 8 | Int(liveRecords[record.lowerBound + 5])
                bytes.append(contentsOf: liveRecords[(record.lowerBound + 6)..<(record.lowerBound + 6 + length)])
                return
            }
            let (chunk, offset) = resting[position - liveEnds.count]
            export.resting.withRecord(chunk: chunk, offset: offset) { address, _, _, _ in bytes.append(contentsOf: address) }
        }

        var body = ByteWriter(capacity: capacity)
        for done in 0..<count {
            if done & 4_095 == 0 { try check() }
            let position = sorted?[done] ?? done
            guard position >= liveEnds.count else {
                body.write(contentsOf: liveRecords[liveRecord(position)])
                continue
            }
            let (chunk, offset) = resting[position - liveEnds.count]
            export.resting.withRecord(chunk: chunk, offset: offset) { address, lastSeq, state, ownership in
                let version = export.versions.stateVersion(atUTF8: address)
                SnapshotChunkMessage.writeRecord(address: address, lastSeq: lastSeq, stateVersion: version, into: &body) { writer in
                    writer.write(contentsOf: ownership)
                    writer.write(contentsOf: state)
                }
            }
        }
        append(sessions, to: &body)
        return (body.bytes, count)
    }

    /// Every instance's state as a snapshot's bytes, to the end (``encode(_:sessions:order:checking:)``).
    static func encode(
        _ export: ReplicaSet.StateExport, sessions: [DedupTable.Remembered] = [], order: Order = .byAddress
    ) -> (bytes: [UInt8], count: Int) {
        encode(export, sessions: sessions, order: order, checking: {})
    }

    /// The sessions block after the records, when there are sessions.
    private static func append(_ sessions: [DedupTable.Remembered], to writer: inout ByteWriter) {
        guard !sessions.isEmpty else { return }
        let block = SnapshotChunkMessage.sessionsFrame(sessions)
        writer.write(contentsOf: block)
        writer.write(UInt32(block.count))
        writer.write(contentsOf: sessionsMark)
    }

    static func decode(_ bytes: [UInt8]) throws -> (instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered]) {
        let layout = try layout(bytes)
        let sessions = try layout.sessions.map { try SnapshotChunkMessage.sessions(from: Array(bytes[$0])) } ?? []
        return (try SnapshotChunkMessage.instances(inRecords: Array(bytes[..<layout.recordsEnd])), sessions)
    }

    /// Where a snapshot's instance records end, and where its sessions frame lies, if it has one.
    static func layout(_ bytes: [UInt8]) throws -> (recordsEnd: Int, sessions: Range<Int>?) {
        guard bytes.count >= 8, bytes.suffix(4).elementsEqual(sessionsMark) else { return (bytes.count, nil) }
        var reader = ByteReader(Array(bytes.suffix(8).prefix(4)), context: "snapshot sessions length")
        let length = Int(try reader.readUInt32("length"))
        guard length <= bytes.count - 8 else { throw ProtocolError(.malformed, "a snapshot's sessions block is longer than the snapshot") }
        let start = bytes.count - 8 - length
        return (start, start..<(bytes.count - 8))
    }
}
