/// The sizes the cluster admits, derived from the transport's frame limit so that anything admitted
/// can always travel: an admitted event's entry fits, alone, in the records frame of an ENTRIES or
/// RANGE message, and snapshots split states larger than a chunk (docs/PROTOCOL.md, "Limits").
///
/// libzmq applies `ZMQ_MAXMSGSIZE` to each frame of a message, and disconnects a peer that sends a
/// larger frame; so the frame that must fit is the largest one a message carries.
public struct AdmissionLimits: Sendable, Equatable {
    /// The largest event payload admitted, in bytes, as submitted and in the flow's wire codec.
    public var maxEventBytes: Int

    /// The default: 1 MiB, far below the ceiling of the default 64 MiB frame limit.
    public static let defaultMaxEventBytes = 1 << 20

    /// The longest cancel id, in bytes: a CANCEL carries it as a short-string.
    public static let maxCancelIDBytes = CancelPayload.maxCancelIDBytes

    /// An entry record's bytes besides its payload, at the longest address: the fixed fields, the
    /// address's length and the address.
    static let entryOverhead = Entry.fixedSize + 2 + Address.maxBytes

    public init(maxEventBytes: Int = AdmissionLimits.defaultMaxEventBytes) {
        self.maxEventBytes = maxEventBytes
    }

    /// The largest entry record that fits a records frame alone (a `u32` length, then the record).
    public static func largestEntryRecord(frameLimit: Int64) -> Int {
        Int(frameLimit) - 4
    }

    /// The largest ``maxEventBytes`` a transport with this frame limit can carry: the entry of an
    /// event that large, at the longest address, still fits ``largestEntryRecord(frameLimit:)``.
    public static func eventCeiling(frameLimit: Int64) -> Int {
        largestEntryRecord(frameLimit: frameLimit) - entryOverhead
    }

    /// Checks the limits against the transport's frame limit, before a process serves anyone.
    public func validate(against transport: TransportOptions) throws {
        let ceiling = Self.eventCeiling(frameLimit: transport.maxMessageBytes)
        guard maxEventBytes >= 1, maxEventBytes <= ceiling else {
            throw ConfigurationError(
                "the largest event must be 1 to \(ceiling) bytes with a \(transport.maxMessageBytes)-byte frame limit, so that its entry fits one message; got \(maxEventBytes)"
            )
        }
    }

    func checkEventSize(_ bytes: Int) throws {
        guard bytes <= maxEventBytes else {
            throw ProtocolError(.oversize, "the event is \(bytes) bytes; events are at most \(maxEventBytes) bytes")
        }
    }
}
