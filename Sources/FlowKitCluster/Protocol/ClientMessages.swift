/// When a node answers an emit or a cancel.
public enum WaitMode: UInt8, Sendable, Codable {
    /// Once the coordinator has ordered the entry (durable, with its seq).
    case ordered = 0
    /// Once this node has also applied it: a query that follows sees the change (read-your-writes).
    case applied = 1
}

/// A request on a node's client socket.
///
/// Each starts with a client-chosen request id that the answer repeats, so a client can have many
/// requests in flight on one DEALER socket.
@_spi(Wire) public enum ClientRequest: Sendable, Equatable {
    /// `EMIT`: `[header request:u64 wait:u8 codec:u8 address:short-string] [payload]`.
    case emit(request: UInt64, wait: WaitMode, codec: PayloadCodec, address: String, payload: [UInt8])
    /// `QUERY`: `[header request:u64 min:u64 address:short-string]`. The node answers once it has
    /// applied at least `min` (0: at once), so a client that emitted elsewhere can read its write.
    case query(request: UInt64, minApplied: UInt64, address: String)
    /// `CANCEL`: `[header request:u64 wait:u8 all:u8 address:short-string id:short-string]`; with
    /// `all` = 1 the id is empty and every effect of the instance is cancelled.
    case cancel(request: UInt64, wait: WaitMode, address: String, id: String?)
    /// `STATUS`: `[header request:u64]`.
    case status(request: UInt64)
    /// `WATCH`: `[header request:u64 seconds:u32]`: push a `PROGRESS` after every batch this node
    /// applies, for `seconds` (at most 3600). Load tools measure apply latency with it.
    case watch(request: UInt64, seconds: UInt32)

    public var request: UInt64 {
        switch self {
        case .emit(let request, _, _, _, _), .query(let request, _, _), .cancel(let request, _, _, _), .status(let request),
            .watch(let request, _):
            request
        }
    }

    public var frames: [[UInt8]] {
        var writer = ByteWriter(capacity: 64)
        switch self {
        case .watch(let request, let seconds):
            WireHeader.write(.watch, into: &writer)
            writer.write(request)
            writer.write(seconds)
        case .emit(let request, let wait, let codec, let address, let payload):
            WireHeader.write(.emit, into: &writer)
            writer.write(request)
            writer.write(wait.rawValue)
            writer.write(codec.rawValue)
            writer.writeShortString(address)
            return [writer.bytes, payload]
        case .query(let request, let minApplied, let address):
            WireHeader.write(.query, into: &writer)
            writer.write(request)
            writer.write(minApplied)
            writer.writeShortString(address)
        case .cancel(let request, let wait, let address, let id):
            WireHeader.write(.cancel, into: &writer)
            writer.write(request)
            writer.write(wait.rawValue)
            writer.write(id == nil ? 1 as UInt8 : 0)
            writer.writeShortString(address)
            writer.writeShortString(id ?? "")
        case .status(let request):
            WireHeader.write(.status, into: &writer)
            writer.write(request)
        }
        return [writer.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        guard let first = frames.first else {
            throw ProtocolError(.wrongFrameCount, "a request has at least one frame")
        }
        var (type, reader) = try WireHeader.read(first, expecting: .emit, .query, .cancel, .status, .watch)
        let request = try reader.readUInt64("request")
        switch type {
        case .emit:
            try expectFrames(frames, 2, for: "EMIT")
            let wait = try Self.waitMode(&reader)
            let codec = try reader.readCodec()
            let address = try reader.readShortString("address")
            self = .emit(request: request, wait: wait, codec: codec, address: address, payload: frames[1])
        case .query:
            try expectFrames(frames, 1, for: "QUERY")
            let minApplied = try reader.readUInt64("min")
            self = .query(request: request, minApplied: minApplied, address: try reader.readShortString("address"))
        case .cancel:
            try expectFrames(frames, 1, for: "CANCEL")
            let wait = try Self.waitMode(&reader)
            let all = try reader.readUInt8("all")
            let address = try reader.readShortString("address")
            let id = try reader.readShortBytes("id")
            switch all {
            case 0:
                // The same rule as a kind 2 submission's at the coordinator.
                self = .cancel(request: request, wait: wait, address: address, id: try CancelPayload.cancelID(id))
            case 1:
                try CancelPayload.checkCancelAll(id)
                self = .cancel(request: request, wait: wait, address: address, id: nil)
            default:
                throw ProtocolError(.malformed, "all must be 0 (cancel by id) or 1 (every effect); got \(all)")
            }
        case .watch:
            try expectFrames(frames, 1, for: "WATCH")
            self = .watch(request: request, seconds: try reader.readUInt32("seconds"))
        default:
            try expectFrames(frames, 1, for: "STATUS")
            self = .status(request: request)
        }
        try reader.expectEnd(of: "the request's header")
    }

    private static func waitMode(_ reader: inout ByteReader) throws -> WaitMode {
        let raw = try reader.readUInt8("wait")
        guard let wait = WaitMode(rawValue: raw) else {
            throw ProtocolError(.malformed, "wait must be 0 (ordered) or 1 (applied); got \(raw)")
        }
        return wait
    }
}

/// An answer on a node's client socket.
@_spi(Wire) public enum ClientReply: Sendable, Equatable {
    /// `EMITTED`: `[header request:u64 seq:u64 epoch:u32 applied:u8]`, for `EMIT` and `CANCEL`.
    case emitted(request: UInt64, seq: UInt64, epoch: UInt32, applied: Bool)
    /// `STATE`: `[header request:u64 applied:u64 last:u64 digest:16 bytes] [state JSON]`: the node's
    /// applied seq, the seq of the instance's last entry, its digest and its state.
    case state(request: UInt64, applied: UInt64, lastSeq: UInt64, digest: [UInt8], state: [UInt8])
    /// `STATUS_REPLY`: `[header request:u64] [JSON]`.
    case status(request: UInt64, json: [UInt8])
    /// `PROGRESS`: `[header request:u64 applied:u64 time:u64]`, pushed to a `WATCH`er after each
    /// batch the node applies: its applied seq and when (microseconds since the Unix epoch).
    case progress(request: UInt64, applied: UInt64, time: UInt64)
    /// `ERROR`: `[header request:u64 code:u16 message:short-string]`.
    case error(request: UInt64, ProtocolError)

    public var frames: [[UInt8]] {
        var writer = ByteWriter(capacity: 48)
        switch self {
        case .emitted(let request, let seq, let epoch, let applied):
            WireHeader.write(.emitted, into: &writer)
            writer.write(request)
            writer.write(seq)
            writer.write(epoch)
            writer.write(applied ? 1 as UInt8 : 0)
        case .state(let request, let applied, let lastSeq, let digest, let state):
            WireHeader.write(.state, into: &writer)
            writer.write(request)
            writer.write(applied)
            writer.write(lastSeq)
            writer.write(contentsOf: digest)
            return [writer.bytes, state]
        case .status(let request, let json):
            WireHeader.write(.statusReply, into: &writer)
            writer.write(request)
            return [writer.bytes, json]
        case .progress(let request, let applied, let time):
            WireHeader.write(.progress, into: &writer)
            writer.write(request)
            writer.write(applied)
            writer.write(time)
        case .error(let request, let error):
            return ErrorReply(request: request, error: error).frames
        }
        return [writer.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        guard let first = frames.first else {
            throw ProtocolError(.wrongFrameCount, "a reply has at least one frame")
        }
        var (type, reader) = try WireHeader.read(first, expecting: .emitted, .state, .statusReply, .progress, .error)
        switch type {
        case .emitted:
            try expectFrames(frames, 1, for: "EMITTED")
            self = .emitted(
                request: try reader.readUInt64("request"),
                seq: try reader.readUInt64("seq"),
                epoch: try reader.readUInt32("epoch"),
                applied: try reader.readUInt8("applied") != 0
            )
        case .state:
            try expectFrames(frames, 2, for: "STATE")
            self = .state(
                request: try reader.readUInt64("request"),
                applied: try reader.readUInt64("applied"),
                lastSeq: try reader.readUInt64("last seq"),
                digest: try reader.readBytes(16, "digest"),
                state: frames[1]
            )
        case .statusReply:
            try expectFrames(frames, 2, for: "STATUS_REPLY")
            self = .status(request: try reader.readUInt64("request"), json: frames[1])
        case .progress:
            try expectFrames(frames, 1, for: "PROGRESS")
            self = .progress(
                request: try reader.readUInt64("request"),
                applied: try reader.readUInt64("applied"),
                time: try reader.readUInt64("time")
            )
        default:
            let reply = try ErrorReply(frames: frames)
            self = .error(request: reply.request, reply.error)
        }
    }

    public var request: UInt64 {
        switch self {
        case .emitted(let request, _, _, _), .state(let request, _, _, _, _), .status(let request, _), .error(let request, _),
            .progress(let request, _, _):
            request
        }
    }
}

/// `ERROR`, on any socket that answers requests: `[header request:u64 code:u16 message:short-string]`.
///
/// `request` is the id of the request refused, or 0 when it could not be read.
@_spi(Wire) public struct ErrorReply: Sendable, Equatable {
    public var request: UInt64
    public var error: ProtocolError
    /// The protocol version the refusal came in (and is encoded in). One that refuses a version
    /// (`unsupportedVersion`) says in it a version its sender speaks (``olderProtocol(than:)``).
    public var protocolVersion: UInt8 = WireHeader.version

    public init(request: UInt64, error: ProtocolError) {
        self.request = request
        self.error = error
    }

    /// The older protocol version to speak to the refuser from now on, when this refuses
    /// `speaking` and its sender speaks an older one this process does; nil otherwise.
    public func olderProtocol(than speaking: UInt8) -> UInt8? {
        guard error.code == .unsupportedVersion, protocolVersion < speaking, WireHeader.spoken.contains(protocolVersion) else { return nil }
        return protocolVersion
    }

    public var frames: [[UInt8]] {
        var writer = ByteWriter(capacity: 32 + error.message.utf8.count)
        // In the version it was read in: an ERROR's layout is the same in every version.
        WireHeader.write(.error, version: protocolVersion, into: &writer)
        writer.write(request)
        writer.write(error.code.rawValue)
        // Long messages are cut at a character boundary to fit a short string.
        var message = error.message
        while message.utf8.count > 4000 { message.removeLast() }
        writer.writeShortString(message)
        return [writer.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 1, for: "ERROR")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .error)
        protocolVersion = reader.protocolVersion
        request = try reader.readUInt64("request")
        let rawCode = try reader.readUInt16("code")
        let message = try reader.readShortString("message")
        error = ProtocolError(ProtocolError.Code(rawValue: rawCode) ?? .internalError, message)
    }
}
