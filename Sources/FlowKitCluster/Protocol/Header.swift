#if canImport(Glibc)
import Glibc
#endif

/// The kinds of message, by the type byte of the header. Values are part of the wire protocol.
@_spi(Wire) public enum MessageType: UInt8, Sendable, CaseIterable {
    // Node → coordinator, on the submit socket.
    case submit = 0x01
    case ack = 0x02
    case hello = 0x03
    case welcome = 0x04
    case nodeReport = 0x05
    case notLeader = 0x06
    // Coordinator → everyone, on the publish socket.
    case entries = 0x10
    case heartbeat = 0x11
    case clusterStatus = 0x12
    case alarm = 0x13
    // The coordinator's sync socket.
    case rangeRequest = 0x20
    case range = 0x21
    case snapshotRequest = 0x22
    case snapshotChunk = 0x23
    // Between coordinators, on the leader's sync socket.
    case fetch = 0x24
    case fetched = 0x25
    // A node's client socket.
    case emit = 0x30
    case emitted = 0x31
    case query = 0x32
    case state = 0x33
    case cancel = 0x34
    case status = 0x36
    case statusReply = 0x37
    case watch = 0x38
    case progress = 0x39
    // Any socket that answers requests.
    case error = 0x7F

    /// The name docs/PROTOCOL.md gives it. A switch over static strings: interpolating the case
    /// itself goes through the runtime's reflection, which cost a node 6 % of its time when every
    /// decoded message did it.
    public var name: String {
        switch self {
        case .submit: "SUBMIT"
        case .ack: "ACK"
        case .hello: "HELLO"
        case .welcome: "WELCOME"
        case .nodeReport: "NODE_REPORT"
        case .notLeader: "NOT_LEADER"
        case .entries: "ENTRIES"
        case .heartbeat: "HEARTBEAT"
        case .clusterStatus: "CLUSTER_STATUS"
        case .alarm: "ALARM"
        case .rangeRequest: "RANGE_REQUEST"
        case .range: "RANGE"
        case .snapshotRequest: "SNAPSHOT_REQUEST"
        case .snapshotChunk: "SNAPSHOT_CHUNK"
        case .fetch: "FETCH"
        case .fetched: "FETCHED"
        case .emit: "EMIT"
        case .emitted: "EMITTED"
        case .query: "QUERY"
        case .state: "STATE"
        case .cancel: "CANCEL"
        case .status: "STATUS"
        case .statusReply: "STATUS_REPLY"
        case .watch: "WATCH"
        case .progress: "PROGRESS"
        case .error: "ERROR"
        }
    }
}

/// The four bytes every FlowKit message body starts with: magic `FK`, version, type.
@_spi(Wire) public enum WireHeader {
    public static let magic: (UInt8, UInt8) = (0x46, 0x4B)
    /// The protocol version this build's encoders write. A peer that speaks an older one is
    /// answered in its own (``WireDialect``).
    public static let version: UInt8 = 4
    /// The oldest protocol version this build reads and can answer in.
    public static let oldest: UInt8 = 3
    public static let size = 4

    /// The versions this process speaks: from ``oldest`` to ``version``, or to the version
    /// `FLOWKIT_WIRE_PROTOCOL` pins (docs/VERSIONING.md, "Upgrading the wire protocol"): a process
    /// pinned to 3 reads and writes only what a build of protocol 3 would, so a cluster can be
    /// moved to a new protocol one process at a time, and the move tested.
    public static let spoken: ClosedRange<UInt8> = {
        let newest = getenv("FLOWKIT_WIRE_PROTOCOL").flatMap { UInt8(String(cString: $0)) }.map { min(max($0, oldest), version) }
        return oldest...(newest ?? version)
    }()

    /// The version to answer a peer whose message said `version` in: its own when this process
    /// speaks it, else the nearest this process does (a refusal the peer can read, whose header
    /// tells it which versions to try).
    static func answer(_ version: UInt8) -> UInt8 {
        min(max(version, spoken.lowerBound), spoken.upperBound)
    }

    /// Writes a header of `version` (this build's unless a message keeps the one it was read in).
    static func write(_ type: MessageType, version: UInt8 = version, into writer: inout ByteWriter) {
        writer.write(magic.0)
        writer.write(magic.1)
        writer.write(version)
        writer.write(type.rawValue)
    }

    /// Reads and checks a header; the reader remembers its version, by which the records of the
    /// message are read (``ByteReader/protocolVersion``).
    ///
    /// - Returns: The message type.
    static func read(from reader: inout ByteReader) throws -> MessageType {
        guard reader.remaining >= size else {
            throw ProtocolError(.truncated, "the header needs 4 bytes (F, K, version, type); got \(reader.remaining)")
        }
        let first = try reader.readUInt8("magic")
        let second = try reader.readUInt8("magic")
        guard first == magic.0, second == magic.1 else {
            throw ProtocolError(.badMagic, "a FlowKit message starts with the bytes \"FK\"")
        }
        let version = try reader.readUInt8("version")
        guard spoken.contains(version) else {
            throw ProtocolError(
                .unsupportedVersion,
                "protocol version \(version) is not supported; this process speaks versions \(spoken.lowerBound) to \(spoken.upperBound)"
            )
        }
        reader.protocolVersion = version
        let rawType = try reader.readUInt8("type")
        guard let type = MessageType(rawValue: rawType) else {
            throw ProtocolError(.unknownType, "unknown message type 0x\(String(rawType, radix: 16))")
        }
        return type
    }

    /// Reads the header of `frame` and checks that it is one of `expected`.
    static func read(_ frame: [UInt8], expecting expected: MessageType...) throws -> (MessageType, ByteReader) {
        var reader = ByteReader(frame, context: "the message header")
        let type = try read(from: &reader)
        guard expected.contains(type) else {
            throw ProtocolError(
                .unknownType,
                "message type \(type.name) is not accepted here; expected \(expected.map(\.name).joined(separator: " or "))"
            )
        }
        return (type, ByteReader(frame, from: reader.offset, to: frame.count, subject: .message(type), protocolVersion: reader.protocolVersion))
    }
}

/// Checks a message's frame count.
func expectFrames(_ frames: [[UInt8]], _ count: Int, for type: String) throws {
    guard frames.count == count else {
        throw ProtocolError(.wrongFrameCount, "a \(type) message has \(count) frames; got \(frames.count)")
    }
}
