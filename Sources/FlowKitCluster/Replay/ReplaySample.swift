import FlowKitCore
import Foundation

/// A stretch of a cluster's log with what it did, for the replay check (``ReplayCheck``,
/// docs/VERSIONING.md): the states of the instances the stretch touches before it, its entries as
/// the log holds them (each with the version of the flow that wrote it), and those instances'
/// states after it, as the build that exported it computed them.
///
/// `flowkit export` writes one from a running cluster; a team commits it beside its tests. The
/// file is JSON: `record` (an entry record, base64, docs/PROTOCOL.md section 4.1) and `state` are
/// what the check reads; the other fields are there for people.
public struct ReplaySample: Codable, Sendable, Equatable {
    /// An instance's state at one end of the sample.
    public struct Instance: Codable, Sendable, Equatable {
        public var address: String
        /// The seq of the last entry applied to it.
        public var lastSeq: UInt64
        /// The version of the flow whose build wrote the state.
        public var version: UInt16
        /// Its digest, as that build's replicas computed it.
        public var digest: String
        /// The state, as JSON.
        public var state: String

        public init(address: String, lastSeq: UInt64, version: UInt16, digest: String, state: String) {
            self.address = address
            self.lastSeq = lastSeq
            self.version = version
            self.digest = digest
            self.state = state
        }

        /// A snapshot's instance record, with the digest `registry`'s replicas compute for it.
        init(_ record: SnapshotChunkMessage.Instance, registry: FlowRegistry) throws {
            let digest = try registry.flow(for: try Address(parsing: record.address)).stateDigest(record.state, from: record.stateVersion)
            self.init(
                address: record.address, lastSeq: record.lastSeq, version: record.stateVersion, digest: "\(digest)",
                state: String(decoding: record.state, as: UTF8.self)
            )
        }
    }

    /// One entry of the log.
    public struct Record: Codable, Sendable, Equatable {
        public var seq: UInt64
        public var address: String
        /// `event`, `cancel`, `cancelAll`, `quarantined` or `takeover`.
        public var kind: String
        /// The version of the flow that wrote an event (0 for the rest).
        public var version: UInt16
        /// An event's payload as text, when it is JSON.
        public var event: String?
        /// The entry record, base64: what the check applies.
        public var record: String

        @_spi(Wire) public init(_ entry: Entry) {
            seq = entry.seq
            address = entry.address
            kind = "\(entry.kind)"
            version = entry.version
            event = entry.kind == .event && entry.codec == .json ? String(decoding: entry.payload, as: UTF8.self) : nil
            record = Data(entry.encoded).base64EncodedString()
        }

        @_spi(Wire) public func entry() throws -> Entry {
            guard let bytes = Data(base64Encoded: record) else {
                throw ProtocolError(.malformed, "the sample's record of seq \(seq) is not base64")
            }
            return try Entry(decoding: Array(bytes))
        }
    }

    /// What this file is: `flowkit-replay-sample`.
    public var format = Self.formatName
    /// The version of its layout: 1.
    public var formatVersion = 1
    /// The seq the ``start`` states are at: the entries follow it.
    public var from: UInt64
    /// The seq of the last entry: the ``end`` states are at it.
    public var through: UInt64
    /// The version of each flow the exporting build wrote (for people).
    public var flows: [String: UInt16]
    public var start: [Instance]
    public var entries: [Record]
    public var end: [Instance]

    public static let formatName = "flowkit-replay-sample"

    public init(from: UInt64, through: UInt64, flows: [String: UInt16], start: [Instance], entries: [Record], end: [Instance]) {
        self.from = from
        self.through = through
        self.flows = flows
        self.start = start
        self.entries = entries
        self.end = end
    }

    /// Reads a sample file, with a clear error for a file that is not one.
    public init(contentsOf url: URL) throws {
        let data = try Data(contentsOf: url)
        do {
            self = try JSONDecoder().decode(Self.self, from: data)
        } catch {
            throw ProtocolError(.malformed, "\(url.path) is not a FlowKit replay sample (flowkit export writes them): \(error)")
        }
        guard format == Self.formatName, formatVersion == 1 else {
            throw ProtocolError(.malformed, "\(url.path) is a \(format) of version \(formatVersion); this build reads \(Self.formatName) version 1")
        }
    }

    /// The sample as the file holds it: JSON, one field per line where it helps a diff.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
