/// One entry of a ``SegmentLog``: its global sequence number and opaque payload.
public struct LogRecord: Sendable, Hashable {
    /// The record's position in the total order.
    public var seq: UInt64
    /// The record's bytes, stored and returned unchanged.
    public var payload: [UInt8]
    /// The format of `payload`, as read: the ``SegmentLog/Options/payloadFormat`` of the log that
    /// wrote it. An append writes the log's own, whatever a record says.
    public var payloadFormat: UInt32 = 0

    /// Creates a record.
    /// - Parameters:
    ///   - seq: The record's position in the total order.
    ///   - payload: The record's bytes.
    public init(seq: UInt64, payload: [UInt8]) {
        self.seq = seq
        self.payload = payload
    }
}
