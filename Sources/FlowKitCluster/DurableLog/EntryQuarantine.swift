/// What the coordinator serves for a log entry that no message can carry.
///
/// Admission keeps every new entry small enough to travel alone in a records frame. An entry
/// written before that rule (by an older version), or by a bug, may not be: sent as it is, it
/// would disconnect every replica that asked for it and stall them all behind it. Instead it is
/// served as a stand-in of kind ``EntryKind/quarantined`` with the same seq, origin and address,
/// whose payload is the original payload's size; every replica, the coordinator's own included,
/// skips it the same way, so they still converge, and an alarm says which events were lost.
struct EntryQuarantine: Sendable {
    /// The largest entry record a records frame carries.
    let largestRecord: Int

    init(frameLimit: Int64) {
        largestRecord = AdmissionLimits.largestEntryRecord(frameLimit: frameLimit)
    }

    func needsStandIn(_ record: [UInt8]) -> Bool {
        record.count > largestRecord
    }

    /// A log record as every replica applies it: its entry, or the entry's quarantined stand-in.
    func entry(_ record: [UInt8]) throws -> (entry: Entry, quarantined: Bool) {
        let entry = try Entry(decoding: record)
        return needsStandIn(record) ? (Self.standIn(for: entry), true) : (entry, false)
    }

    /// The record itself when it can travel; otherwise its quarantined stand-in.
    func deliverable(_ record: [UInt8]) throws -> [UInt8] {
        needsStandIn(record) ? try Self.standIn(for: Entry(decoding: record)).encoded : record
    }

    static func standIn(for entry: Entry) -> Entry {
        var standIn = entry
        standIn.kind = .quarantined
        standIn.codec = .json
        standIn.version = 0
        var size = ByteWriter(capacity: 8)
        size.write(UInt64(entry.payload.count))
        standIn.payload = size.bytes
        return standIn
    }
}
