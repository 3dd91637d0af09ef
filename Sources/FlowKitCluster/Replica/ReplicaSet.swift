import FlowKit
import Logging

/// Every flow instance a process holds, applied entry by entry in seq order. Nodes and the
/// coordinator both keep one: a node runs the effects of the entries it originated; the
/// coordinator's copy never runs effects and serves snapshots and reference digests. Instances are
/// created on their first entry. Not thread-safe: its owner applies from one serial context.
@_spi(Benchmarks) public final class ReplicaSet {
    private let registry: FlowRegistry
    private let context: ReplicaContext
    private let logger: Logger
    private var replicas: [Address: any FlowReplica] = [:]
    /// The same replicas by address text, as entries carry it: the apply path finds an instance
    /// without parsing or validating its address again.
    private var byText: [String: any FlowReplica] = [:]
    /// Instances changed since a hash of their state last began.
    private var undigested: [any FlowReplica] = []
    /// Digests computed since ``takeChanged(hashing:)``: what a node's next report carries, each
    /// with the seq of the state it describes.
    private var fresh: [Address: InstanceDigest] = [:]
    /// The digest of every instance, combined order-independently and kept up to date as instances
    /// change, so a process with many instances need not rehash them all to report.
    private var combined = DigestAccumulator()
    private var digests: [Address: (seq: UInt64, digest: StateDigest)] = [:]
    /// Instances out in ``takeDigestJobs()``'s jobs.
    private var hashingElsewhere: [any FlowReplica] = []
    /// Bumped when the instances are replaced (a snapshot): jobs of an earlier generation are stale.
    private var generation: UInt64 = 0
    /// Microseconds of hashing periodic digests may spend now: a token bucket refilled at 1/20 of
    /// the time that passes (at most 5 % of a thread), holding at most 50 ms. A process with
    /// large or many changing instances (a ledger of every id) would otherwise spend its time
    /// rehashing them every report; instead the digests lag, and catch up once the load stops.
    /// (A bucket of a second let a replaying node spend a third of its replay hashing.)
    private var digestAllowance: Int64 = ReplicaSet.digestBurst
    private var lastRefresh: UInt64 = 0
    static let digestBudget: UInt64 = 20
    static let digestBurst: Int64 = 50_000
    /// Entries whose payload did not decode, and quarantined ones; every replica skips the same ones.
    private(set) var skippedEntries = 0

    /// A passive set, which never runs effects: the coordinator's, a monitor's, a benchmark's.
    public convenience init(registry: FlowRegistry, logger: Logger) {
        self.init(registry: registry, context: .passive(logger: logger), logger: logger)
    }

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
    public func apply(_ entry: Entry, runEffects: Bool) {
        if entry.kind == .quarantined {
            skip(entry, because: ProtocolError(.oversize, "the coordinator quarantined this entry: too large for any message"))
            return
        }
        let replica: any FlowReplica
        if let existing = byText[entry.address] {
            replica = existing
        } else {
            do {
                replica = try replicaCreatingIfNeeded(try Address(parsing: entry.address))
            } catch {
                // Nodes validate before submitting, so only a node with a different registry gets here.
                skip(entry, because: error)
                return
            }
        }
        do {
            try replica.apply(entry, runEffects: runEffects)
        } catch {
            skip(entry, because: error)
        }
        markChanged(replica)
    }

    private func markChanged(_ replica: any FlowReplica) {
        if !replica.isUndigested {
            replica.isUndigested = true
            undigested.append(replica)
        }
    }

    private func replicaCreatingIfNeeded(_ address: Address) throws -> any FlowReplica {
        if let existing = replicas[address] { return existing }
        let replica = try registry.flow(for: address).makeReplica(address: address, context: context)
        replicas[address] = replica
        byText[address.description] = replica
        return replica
    }

    private func skip(_ entry: Entry, because error: any Error) {
        skippedEntries += 1
        logger.warning(
            "entry skipped",
            metadata: ["flowkit.seq": "\(entry.seq)", "flowkit.address": "\(entry.address)", "flowkit.error": "\(error)"]
        )
    }

    // MARK: Digests

    /// The digests computed since the last call, each with the seq of the state it describes.
    ///
    /// - Parameter hashing: Hash changed instances now, within the budget (an owner that hashes
    ///   off its thread, through ``takeDigestJobs()``, passes `false`).
    func takeChanged(hashing: Bool = true) -> [Address: InstanceDigest] {
        if hashing { refreshDigests(all: false) }
        defer { fresh = [:] }
        return fresh
    }

    /// The combined digest as last computed, without hashing anything now.
    var lastCombinedDigest: StateDigest { combined.digest }

    /// Whether every instance's digest describes its current state (none deferred, none in a job).
    var digestsAreCurrent: Bool { undigested.isEmpty && hashingElsewhere.isEmpty }

    /// The combined digest of every instance.
    ///
    /// - Parameter exact: Hash every changed instance now (a status query); otherwise (a periodic
    ///   report) instances the budget defers count with their last digest.
    func combinedDigest(exact: Bool = true) -> StateDigest {
        refreshDigests(all: exact)
        return combined.digest
    }

    /// Refills the hashing allowance for the time since the last refill.
    private func refillAllowance() {
        let now = WallClock.micros()
        if lastRefresh != 0, now > lastRefresh {
            digestAllowance = min(digestAllowance + Int64((now - lastRefresh) / Self.digestBudget), Self.digestBurst)
        }
        lastRefresh = now
    }

    /// Rehashes the instances changed since their digests were last computed: with `all`, every
    /// one, those out in jobs too (until a job is back, its digests are from before); otherwise
    /// as many as the digest budget allows now, oldest change first.
    private func refreshDigests(all: Bool) {
        refillAllowance()
        var deferred: [any FlowReplica] = []
        let elsewhere = all ? hashingElsewhere.filter { (digests[$0.address]?.seq ?? 0) < $0.lastSeq } : []
        for replica in undigested + elsewhere {
            guard replicas[replica.address] === replica else {
                replica.isUndigested = false
                continue
            }
            guard all || digestAllowance > 0 else {
                deferred.append(replica)
                continue
            }
            replica.isUndigested = false
            let started = WallClock.micros()
            // Charged as a whole, hashing the state and folding it into the combined digest: the
            // fold hashes too, and counting only the first let twice the budget through.
            defer { digestAllowance -= Int64(WallClock.micros() - min(started, WallClock.micros())) }
            guard let digest = try? replica.digest() else { continue }
            record(replica.address, seq: replica.lastSeq, digest: digest)
        }
        undigested = deferred
    }

    /// Records a digest, unless one of a later state is recorded already (a job that finished
    /// after a status query hashed the instance again).
    private func record(_ address: Address, seq: UInt64, digest: StateDigest) {
        if let old = digests[address] {
            guard old.seq <= seq else { return }
            combined.remove(address, old.digest)
        }
        combined.add(address, digest)
        digests[address] = (seq, digest)
        fresh[address] = InstanceDigest(seq: seq, digest: digest.description)
    }

    /// A state to hash off the owner's thread: its instance, the seq it is at, and the work.
    struct DigestJob: Sendable {
        let address: Address
        let seq: UInt64
        let generation: UInt64
        let hash: @Sendable () throws -> StateDigest
    }

    /// What a ``DigestJob`` found.
    struct DigestResult: Sendable {
        let address: Address
        let seq: UInt64
        let generation: UInt64
        let digest: StateDigest
    }

    /// Hands out the changed instances' states to hash elsewhere, so the owner's thread, which
    /// applies entries and answers clients, never stalls hashing (a node did for up to 50 ms at a
    /// time, the budget's burst, and that was its p99). Nothing while jobs are out or the budget
    /// is spent; the states are copies (copy-on-write), taken now.
    func takeDigestJobs() -> [DigestJob] {
        refillAllowance()
        guard hashingElsewhere.isEmpty, digestAllowance > 0, !undigested.isEmpty else { return [] }
        var jobs: [DigestJob] = []
        for replica in undigested where replicas[replica.address] === replica {
            replica.isUndigested = false
            jobs.append(DigestJob(address: replica.address, seq: replica.lastSeq, generation: generation, hash: replica.digestJob()))
        }
        hashingElsewhere = undigested.filter { replicas[$0.address] === $0 }
        undigested = []
        return jobs
    }

    /// Runs digest jobs where it is called; returns what they found and the microseconds it took.
    static func hash(_ jobs: [DigestJob]) -> (results: [DigestResult], micros: UInt64) {
        let started = WallClock.micros()
        var results: [DigestResult] = []
        results.reserveCapacity(jobs.count)
        for job in jobs {
            guard let digest = try? job.hash() else { continue }
            results.append(DigestResult(address: job.address, seq: job.seq, generation: job.generation, digest: digest))
        }
        return (results, WallClock.micros() - min(started, WallClock.micros()))
    }

    /// Takes back what jobs found, charging the time they took to the budget.
    func finishDigestJobs(_ results: [DigestResult], hashingMicros: UInt64) {
        hashingElsewhere = []
        digestAllowance -= Int64(hashingMicros)
        for result in results where result.generation == generation && replicas[result.address] != nil {
            record(result.address, seq: result.seq, digest: result.digest)
        }
    }

    // MARK: Snapshots

    /// Every instance's state, as JSON, with the seq of its last entry.
    func exportStates() -> [SnapshotChunkMessage.Instance] {
        Self.encode(exportStateJobs())
    }

    /// Every instance's state, copied now, to encode as JSON elsewhere (``encode(_:)``): a process
    /// with many instances does not stall its thread encoding them all.
    func exportStateJobs() -> [(address: String, lastSeq: UInt64, encode: @Sendable () throws -> [UInt8])] {
        replicas.sorted { $0.key < $1.key }.map { address, replica in (address.description, replica.lastSeq, replica.stateJSONJob()) }
    }

    /// Runs what ``exportStateJobs()`` handed out; an instance whose state does not encode is left out.
    static func encode(_ jobs: [(address: String, lastSeq: UInt64, encode: @Sendable () throws -> [UInt8])]) -> [SnapshotChunkMessage.Instance] {
        jobs.compactMap { job in
            guard let state = try? job.encode() else { return nil }
            return SnapshotChunkMessage.Instance(address: job.address, lastSeq: job.lastSeq, state: state)
        }
    }

    /// Replaces everything with the instances of a snapshot. Running effects of dropped instances end.
    func importStates(_ instances: [SnapshotChunkMessage.Instance]) throws {
        for replica in replicas.values { replica.shutDown() }
        replicas = [:]
        byText = [:]
        digests = [:]
        combined = DigestAccumulator()
        fresh = [:]
        undigested = []
        hashingElsewhere = []
        generation += 1
        for instance in instances {
            let address = try Address(parsing: instance.address)
            let replica = try replicaCreatingIfNeeded(address)
            try replica.restore(stateJSON: instance.state, lastSeq: instance.lastSeq)
            markChanged(replica)
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
