import Synchronization

/// A message as an older protocol version says it, for a peer that speaks only that version
/// (docs/VERSIONING.md, "Upgrading the wire protocol").
///
/// Every encoder writes this build's version (``WireHeader/version``); a connection whose peer
/// speaks an older one gets the same message through ``translate(_:to:topic:)``. Between 3 and 4
/// only the header's version byte and the `version` field of entry and submission records differ
/// (docs/PROTOCOL.md, section 11), and a snapshot record's state version, which protocol 3 cannot
/// carry. What an older version cannot carry (an event or a state of a flow version above 1) is
/// refused, never sent as something else: the agreement (``VersionAgreement``) holds such events
/// back while a node speaks protocol 3, so only an upgrade done out of order meets the refusal.
enum WireDialect {
    /// `body`, encoded by this build, in protocol `version` (at most this build's).
    ///
    /// - Parameter topic: Whether the first frame is a publish topic, the header the second.
    /// - Throws: `unsupportedVersion` when a record holds what `version` cannot carry.
    static func translate(_ body: [[UInt8]], to version: UInt8, topic: Bool = false) throws -> [[UInt8]] {
        let at = topic ? 1 : 0
        guard version < WireHeader.version, body.count > at, body[at].count >= WireHeader.size else { return body }
        var frames = body
        frames[at][2] = version
        switch MessageType(rawValue: frames[at][3]) {
        case .submit where frames.count > 1:
            frames[1] = try unversioned(frames[1], version: version, layout: .submission)
        case .range where frames.count > 1, .fetched where frames.count > 1:
            frames[1] = try unversioned(frames[1], version: version, layout: .entry)
        case .entries where frames.count > 2:
            frames[2] = try unversioned(frames[2], version: version, layout: .entry)
        case .snapshotChunk where frames.count > 1:
            if let newer = try SnapshotChunkMessage.instances(inRecords: frames[1]).first(where: { $0.stateVersion != 1 }) {
                throw ProtocolError(
                    .unsupportedVersion,
                    "the state of \(newer.address) was written by version \(newer.stateVersion) of its flow, which protocol \(version) cannot carry: "
                        + "upgrade this process to protocol \(WireHeader.version) (docs/VERSIONING.md)"
                )
            }
        default:
            break
        }
        return frames
    }

    /// `body` in `version`, or when that version cannot carry it, the refusal that says so (to the
    /// request the reply answers: a reply's request id follows its header, when it has one).
    static func answer(_ body: [[UInt8]], in version: UInt8) -> [[UInt8]] {
        do {
            return try translate(body, to: version)
        } catch {
            let header = body.first ?? []
            let request = header.count >= 12 ? header[4..<12].reduce(0) { $0 << 8 | UInt64($1) } : 0
            let refusal = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
            return (try? translate(ErrorReply(request: request, error: refusal).frames, to: version)) ?? []
        }
    }

    /// Where a record's version field sits.
    private enum Layout {
        case entry, submission

        var kindOffset: Int { self == .entry ? 12 : 8 }
        var versionOffset: Int { self == .entry ? Entry.versionOffset : 10 }
    }

    /// A frame of `u32`-length-prefixed records without their version fields: each event must be
    /// of version 1, which an older reader assumes.
    private static func unversioned(_ frame: [UInt8], version: UInt8, layout: Layout) throws -> [UInt8] {
        var reader = ByteReader(frame, context: "records")
        var writer = ByteWriter(capacity: frame.count)
        while !reader.isAtEnd {
            let length = Int(try reader.readUInt32("record", isLength: true))
            let record = try reader.readBytes(length, "record")
            guard record.count >= layout.versionOffset + 2 else {
                writer.writeLengthPrefixed(record)
                continue
            }
            let recordVersion = UInt16(record[layout.versionOffset]) << 8 | UInt16(record[layout.versionOffset + 1])
            if record[layout.kindOffset] == EntryKind.event.rawValue, recordVersion != 1 {
                let what = layout == .entry ? "entry \(Entry.peekSeq(record) ?? 0)" : "a submission"
                throw ProtocolError(
                    .unsupportedVersion,
                    "\(what) was written by version \(recordVersion) of its flow, which protocol \(version) cannot carry: "
                        + "upgrade the process that speaks protocol \(version) (docs/VERSIONING.md)"
                )
            }
            writer.writeLengthPrefixed(Array(record[..<layout.versionOffset]) + record[(layout.versionOffset + 2)...])
        }
        return writer.bytes
    }
}

/// The wire protocol a peer speaks, as a client learns it from the peer's refusals
/// (``ErrorReply/olderProtocol(than:)``).
final class SpokenProtocol: Sendable {
    private let stored = Atomic<UInt8>(WireHeader.spoken.upperBound)

    var version: UInt8 {
        get { stored.load(ordering: .relaxed) }
        set { stored.store(newValue, ordering: .relaxed) }
    }
}
