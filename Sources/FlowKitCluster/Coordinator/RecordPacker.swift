/// Packs encoded records into records frames of at most `maxCount` records and `maxBytes` bytes
/// each; a record larger than `maxBytes` travels alone (it still fits a frame: admission sees to
/// that). Every ENTRIES message the coordinator publishes is packed by it.
struct RecordPacker {
    let maxCount: Int
    let maxBytes: Int

    /// The records frames, in order.
    func pack(_ records: some Sequence<[UInt8]>) -> [(count: Int, frame: [UInt8])] {
        var frames: [(count: Int, frame: [UInt8])] = []
        var writer = ByteWriter(capacity: 64 * 1_024)
        var count = 0
        for record in records {
            if count > 0, count == maxCount || writer.bytes.count + 4 + record.count > maxBytes {
                frames.append((count, writer.bytes))
                writer = ByteWriter(capacity: 64 * 1_024)
                count = 0
            }
            writer.writeLengthPrefixed(record)
            count += 1
        }
        if count > 0 { frames.append((count, writer.bytes)) }
        return frames
    }
}

/// Runs of consecutive entries of one instance, each packed into as many records frames as it
/// needs: one ENTRIES message each, under the instance's address.
func entryRuns(
    _ entries: [Entry],
    records: [(seq: UInt64, record: [UInt8])],
    packer: RecordPacker
) -> [(address: String, count: Int, records: [UInt8])] {
    var runs: [(address: String, count: Int, records: [UInt8])] = []
    var start = 0
    while start < entries.count {
        let address = entries[start].address
        var end = start + 1
        while end < entries.count, entries[end].address == address { end += 1 }
        for frame in packer.pack(records[start..<end].lazy.map(\.record)) {
            runs.append((address, frame.count, frame.frame))
        }
        start = end
    }
    return runs
}
