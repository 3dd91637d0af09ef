import FlowKit
import Logging

/// Every flow instance a process holds, applied entry by entry in seq order.
///
/// Nodes and the coordinator both keep one: a node runs the effects of the entries it originated; the
/// coordinator's copy never runs effects and serves snapshots and reference digests. Instances are
/// created on their first entry. Not thread-safe: its owner applies from one serial context.
final class ReplicaSet {
    private let registry: FlowRegistry
    private let context: ReplicaContext
    private let logger: Logger
    private var replicas: [Address: any FlowReplica] = [:]
    /// Instances changed since ``takeChanged()``: what a node's next report carries digests for.
    private var changed: Set<Address> = []
    /// Instances changed since their digest was last computed.
    private var stale: Set<Address> = []
    /// The digest of every instance, combined order-independently and kept up to date as instances
    /// change, so a process with many instances need not rehash them all to report.
    private var combined = DigestAccumulator()
    private var digests: [Address: StateDigest] = [:]
    /// Entries whose payload did not decode; every replica skips the same ones.
    private(set) var skippedEntries = 0

    init(registry: FlowRegistry, context: ReplicaContext, logger: Logger) {
        self.registry = registry
        self.context = context
        self.logger = logger
    }

    var count: Int { replicas.count }
    var addresses: some Collection<Address> { replicas.keys }
    var runningEffects: Int { replicas.values.reduce(0) { $0 + $1.runningEffects } }

    func replica(at address: Address) -> (any FlowReplica)? { replicas[address] }

    /// Applies one ordered entry, creating its instance if this is its first.
    ///
    /// - Parameter runEffects: Whether this process originated the entry and runs its effects.
    func apply(_ entry: Entry, runEffects: Bool) {
        let address: Address
        let replica: any FlowReplica
        do {
            address = try Address(parsing: entry.address)
            replica = try replicaCreatingIfNeeded(address)
        } catch {
            // Nodes validate before submitting, so only a node with a different registry gets here.
            skip(entry, because: error)
            return
        }
        do {
            try replica.apply(entry, runEffects: runEffects)
        } catch {
            skip(entry, because: error)
        }
        changed.insert(address)
        stale.insert(address)
    }

    private func replicaCreatingIfNeeded(_ address: Address) throws -> any FlowReplica {
        if let existing = replicas[address] { return existing }
        let replica = try registry.flow(for: address).makeReplica(address: address, context: context)
        replicas[address] = replica
        return replica
    }

    private func skip(_ entry: Entry, because error: any Error) {
        skippedEntries += 1
        logger.warning(
            "entry skipped",
            metadata: ["flowkit.seq": "\(entry.seq)", "flowkit.address": "\(entry.address)", "flowkit.error": "\(error)"]
        )
    }

    /// Cancels effects of an instance by cancel id, or all of them.
    func cancelEffects(at address: Address, id: String?) {
        guard let replica = replicas[address] else { return }
        let entry = Entry(
            seq: replica.lastSeq, epoch: 0, kind: id == nil ? .cancelAll : .cancel, codec: .json, origin: 0,
            session: 0, submission: 0, submittedAt: 0, committedAt: 0, address: address.description,
            payload: Array((id ?? "").utf8)
        )
        try? replica.apply(entry, runEffects: false)
    }

    // MARK: Digests

    /// The digests of the instances changed since the last call.
    func takeChanged() -> [Address: InstanceDigest] {
        refreshDigests()
        var result: [Address: InstanceDigest] = [:]
        for address in changed {
            guard let replica = replicas[address], let digest = digests[address] else { continue }
            result[address] = InstanceDigest(seq: replica.lastSeq, digest: digest.description)
        }
        changed = []
        return result
    }

    /// The combined digest of every instance, as they are now.
    func combinedDigest() -> StateDigest {
        refreshDigests()
        return combined.digest
    }

    /// Rehashes the instances changed since their digests were last computed, and only those.
    private func refreshDigests() {
        for address in stale {
            guard let replica = replicas[address], let digest = try? replica.digest() else { continue }
            if let old = digests[address] { combined.remove(address, old) }
            combined.add(address, digest)
            digests[address] = digest
        }
        stale = []
    }

    // MARK: Snapshots

    /// Every instance's state, as JSON, with the seq of its last entry.
    func exportStates() -> [SnapshotChunkMessage.Instance] {
        replicas.sorted { $0.key < $1.key }.compactMap { address, replica in
            guard let state = try? replica.stateJSON() else { return nil }
            return SnapshotChunkMessage.Instance(address: address.description, lastSeq: replica.lastSeq, state: state)
        }
    }

    /// Replaces everything with the instances of a snapshot. Running effects of dropped instances end.
    func importStates(_ instances: [SnapshotChunkMessage.Instance]) throws {
        for replica in replicas.values { replica.shutDown() }
        replicas = [:]
        digests = [:]
        combined = DigestAccumulator()
        changed = []
        stale = []
        for instance in instances {
            let address = try Address(parsing: instance.address)
            let replica = try replicaCreatingIfNeeded(address)
            try replica.restore(stateJSON: instance.state, lastSeq: instance.lastSeq)
            changed.insert(address)
            stale.insert(address)
        }
    }

    /// Stops every effect.
    func shutDown() {
        for replica in replicas.values { replica.shutDown() }
    }
}

/// An order-independent digest of a set of `(address, digest)` pairs that can be updated one pair
/// at a time: the XOR of SHA-256(address, digest) over all pairs, truncated to 128 bits.
struct DigestAccumulator {
    private var bytes = [UInt8](repeating: 0, count: 16)

    mutating func add(_ address: Address, _ digest: StateDigest) { toggle(address, digest) }
    mutating func remove(_ address: Address, _ digest: StateDigest) { toggle(address, digest) }

    private mutating func toggle(_ address: Address, _ digest: StateDigest) {
        let pair = StateDigest(combining: [(key: address.description, digest: digest)])
        for index in 0..<16 { bytes[index] ^= pair.bytes[index] }
    }

    var digest: StateDigest {
        StateDigest(bytes: bytes)
    }
}
