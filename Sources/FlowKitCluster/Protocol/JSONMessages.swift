import FlowKitCore
import Foundation

/// Messages whose body is a fixed binary part and a JSON document: membership and status, where
/// readability matters more than speed.
///
/// Frames: `[header fixed…] [JSON]`, with a topic frame first on the publish socket.
enum JSONFrame {
    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding our own plain structs cannot fail.
        return (try? Array(encoder.encode(value))) ?? Array("{}".utf8)
    }

    static func decode<T: Decodable>(_ type: T.Type, from frame: [UInt8], in message: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(frame))
        } catch {
            throw ProtocolError(.malformed, "the JSON of a \(message) message does not decode: \(error)")
        }
    }
}

/// `HELLO`, node → coordinator, when a node starts or reconnects.
///
/// Frames: `[header node:u32 session:u64] [JSON NodeInfo]`.
@_spi(Wire) public struct HelloMessage: Sendable, Equatable {
    public var node: UInt32
    public var session: UInt64
    public var info: NodeInfo

    public init(node: UInt32, session: UInt64, info: NodeInfo) {
        self.node = node
        self.session = session
        self.info = info
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 16)
        WireHeader.write(.hello, into: &header)
        header.write(node)
        header.write(session)
        return [header.bytes, JSONFrame.encode(info)]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 2, for: "HELLO")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .hello)
        node = try reader.readUInt32("node")
        session = try reader.readUInt64("session")
        try reader.expectEnd(of: "HELLO's header")
        guard node >= 1 else { throw ProtocolError(.malformed, "HELLO names node 0; node ids start at 1") }
        info = try JSONFrame.decode(NodeInfo.self, from: frames[1], in: "HELLO")
    }
}

/// What a node tells the coordinator about itself.
@_spi(Wire) public struct NodeInfo: Codable, Sendable, Equatable {
    /// The node's name, `node-<id>` unless configured.
    public var name: String
    /// Where clients reach the node.
    public var clientEndpoint: String
    /// The flows the node can run.
    public var flows: [String]
    /// The process id, for operators.
    public var pid: Int32
    /// Whether the node's ACKs list its submissions that were ordered. `false` from a node that
    /// learns their seqs from their entries, as every FlowKit node does: its ACKs then carry only
    /// duplicates and refusals, and an event costs one message less. Absent means `true`.
    public var ackOrdered: Bool?
    /// The version of each of ``flows`` that the node's build writes (`ReplicatedFlow.version`),
    /// for the flows not at version 1: absent, or a flow left out, means 1. The coordinator orders
    /// an event of a version only when every live node of its flow writes at least that version.
    public var flowVersions: [String: UInt16]?

    public init(name: String, clientEndpoint: String, flows: [String], pid: Int32, ackOrdered: Bool? = nil, flowVersions: [String: UInt16]? = nil) {
        self.name = name
        self.clientEndpoint = clientEndpoint
        self.flows = flows
        self.pid = pid
        self.ackOrdered = ackOrdered
        self.flowVersions = flowVersions
    }

    /// The version the node writes `flow` at.
    public func version(of flow: String) -> UInt16 { flowVersions?[flow] ?? 1 }
}

/// `WELCOME`, coordinator → node, the answer to `HELLO`.
///
/// Frames: `[header epoch:u32 head:u64] [JSON CoordinatorInfo]`.
@_spi(Wire) public struct WelcomeMessage: Sendable, Equatable {
    public var epoch: UInt32
    public var head: UInt64
    public var info: CoordinatorInfo

    public init(epoch: UInt32, head: UInt64, info: CoordinatorInfo) {
        self.epoch = epoch
        self.head = head
        self.info = info
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 16)
        WireHeader.write(.welcome, into: &header)
        header.write(epoch)
        header.write(head)
        return [header.bytes, JSONFrame.encode(info)]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 2, for: "WELCOME")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .welcome)
        epoch = try reader.readUInt32("epoch")
        head = try reader.readUInt64("head")
        try reader.expectEnd(of: "WELCOME's header")
        info = try JSONFrame.decode(CoordinatorInfo.self, from: frames[1], in: "WELCOME")
    }
}

/// What the coordinator tells a node that says hello.
@_spi(Wire) public struct CoordinatorInfo: Codable, Sendable, Equatable {
    /// The oldest seq the log still holds; below it, join through a snapshot.
    public var firstSeq: UInt64
    /// How many submissions per session the coordinator remembers for duplicate detection.
    public var dedupWindow: Int

    public init(firstSeq: UInt64, dedupWindow: Int) {
        self.firstSeq = firstSeq
        self.dedupWindow = dedupWindow
    }
}

/// `NODE_REPORT`, node → coordinator, every report interval: progress and digests.
///
/// Frames: `[header node:u32 applied:u64 time:u64] [JSON NodeReport] [digests]`, the last optional:
/// `(address: short-string, seq: u64, digest: 16 bytes)*`, the changed instances' digests in
/// binary. A report of a thousand of them as JSON took milliseconds of CPU to encode and to decode,
/// a burst once a second that delayed the order; in binary it takes microseconds. FlowKit's nodes
/// send them there; the JSON's `digests` is read too (a report may carry both, if not the same
/// address twice).
///
/// Decoded, every digest is in ``digests``, whichever frame it came in, and the JSON's are taken out
/// of ``report``: they are compared as they are, 16 bytes each, never turned into text and back
/// (which, with a table of them, was most of the coordinator's work on a report).
@_spi(Wire) public struct NodeReportMessage: Sendable, Equatable {
    public var node: UInt32
    public var applied: UInt64
    /// Microseconds since the Unix epoch, the node's clock.
    public var time: UInt64
    public var report: NodeReport
    /// The instances changed since the last report, each with its digest (``NodeReport/digests``
    /// describes them); sent in the binary frame.
    public var digests: [ReportedDigest]

    public init(node: UInt32, applied: UInt64, time: UInt64, report: NodeReport, digests: [ReportedDigest] = []) {
        self.node = node
        self.applied = applied
        self.time = time
        self.report = report
        self.digests = digests
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 24)
        WireHeader.write(.nodeReport, into: &header)
        header.write(node)
        header.write(applied)
        header.write(time)
        guard !digests.isEmpty else { return [header.bytes, JSONFrame.encode(report)] }
        var binary = ByteWriter(capacity: digests.count * 48)
        for reported in digests {
            binary.writeShortString(reported.address)
            binary.write(reported.seq)
            binary.write(reported.digest.high)
            binary.write(reported.digest.low)
        }
        return [header.bytes, JSONFrame.encode(report), binary.bytes]
    }

    /// The node a NODE_REPORT's header frame names, read without decoding the rest.
    public static func node(in header: [UInt8]) throws -> UInt32 {
        var (_, reader) = try WireHeader.read(header, expecting: .nodeReport)
        return try reader.readUInt32("node")
    }

    public init(frames: [[UInt8]]) throws {
        guard frames.count == 2 || frames.count == 3 else {
            throw ProtocolError(.wrongFrameCount, "a NODE_REPORT message has 2 frames, or 3 with binary digests; got \(frames.count)")
        }
        var (_, reader) = try WireHeader.read(frames[0], expecting: .nodeReport)
        node = try reader.readUInt32("node")
        applied = try reader.readUInt64("applied")
        time = try reader.readUInt64("time")
        try reader.expectEnd(of: "NODE_REPORT's header")
        guard node >= 1 else { throw ProtocolError(.malformed, "NODE_REPORT names node 0; node ids start at 1") }
        report = try JSONFrame.decode(NodeReport.self, from: frames[1], in: "NODE_REPORT")
        digests = []
        digests.reserveCapacity(report.digests.count + (frames.count == 3 ? frames[2].count / 34 : 0))
        var addresses = Set<String>(minimumCapacity: digests.capacity)
        for (address, instance) in report.digests {
            guard let digest = StateDigest(hex: instance.digest) else {
                throw ProtocolError(.malformed, "NODE_REPORT's digest for \(address) is not 32 hex digits: \"\(instance.digest)\"")
            }
            addresses.insert(address)
            digests.append(ReportedDigest(address: address, seq: instance.seq, digest: digest))
        }
        report.digests = [:]
        guard frames.count == 3 else { return }
        var binary = ByteReader(frames[2], context: "NODE_REPORT's digests")
        while !binary.isAtEnd {
            let address = try binary.readShortString("address")
            let seq = try binary.readUInt64("seq")
            let digest = StateDigest(high: try binary.readUInt64("digest"), low: try binary.readUInt64("digest"))
            guard addresses.insert(address).inserted else {
                throw ProtocolError(.malformed, "NODE_REPORT carries two digests for \(address)")
            }
            digests.append(ReportedDigest(address: address, seq: seq, digest: digest))
        }
        if let versions = report.flowVersions {
            for index in digests.indices { digests[index].version = ReportedDigest.version(of: digests[index].address, in: versions) }
        }
    }
}

/// A node's progress and health, as it reports it.
public struct NodeReport: Codable, Sendable, Equatable {
    public var name: String
    /// The digest of all the node's instances at `applied` (see `StateDigest.init(combining:)`).
    public var digest: String
    /// The instances changed since the last report: `address →` the seq of the last entry applied to
    /// it and the digest of its state after that entry. Two replicas that report the same address
    /// and seq must report the same digest; if not, they diverged.
    public var digests: [String: InstanceDigest]
    public var instances: Int
    public var runningEffects: Int
    /// Effects lost because the process that ran them died: counted on restart.
    public var effectsLost: Int
    /// Emits waiting for the coordinator.
    public var pendingSubmissions: Int
    public var connected: Bool
    /// The seq `digest` describes exactly: `applied` when every instance's digest is current, 0
    /// while some lag (a busy node hashes within a budget). Digests compare only at the same seq.
    public var digestSeq: UInt64
    /// The entry after `applied` when the node's build cannot read it: it applies nothing more
    /// until it is upgraded. Absent when it reads everything it has met.
    public var unreadable: UnreadableEntry?
    /// The version its build writes of each flow not at version 1, as its HELLO says: the version
    /// of the states its digests hash. Absent when every flow is at 1.
    public var flowVersions: [String: UInt16]?
    /// Of `instances`, those at rest (compact records until their next use). Absent from older nodes.
    public var instancesAtRest: Int?
    /// Of `instances`, those whose latest change `digest` does not hold yet. Absent from older nodes.
    public var instancesUnhashed: Int?

    public init(
        name: String,
        digest: String,
        digests: [String: InstanceDigest],
        instances: Int,
        runningEffects: Int,
        effectsLost: Int,
        pendingSubmissions: Int,
        connected: Bool,
        digestSeq: UInt64 = 0
    ) {
        self.digestSeq = digestSeq
        self.name = name
        self.digest = digest
        self.digests = digests
        self.instances = instances
        self.runningEffects = runningEffects
        self.effectsLost = effectsLost
        self.pendingSubmissions = pendingSubmissions
        self.connected = connected
    }
}

/// An instance's digest after the entry at `seq`, the last entry applied to it.
public struct InstanceDigest: Codable, Sendable, Equatable {
    public var seq: UInt64
    public var digest: String

    public init(seq: UInt64, digest: String) {
        self.seq = seq
        self.digest = digest
    }
}
