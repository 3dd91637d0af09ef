import FlowKitCore
import Foundation
import Logging

/// What a replica needs from the process that hosts it.
struct ReplicaContext: Sendable {
    /// The dependencies effects see.
    var dependencies: DependencyValues
    var logger: Logger
    /// The process whose replicas these are, when it runs effects (a node's process): a takeover
    /// that names it starts the resumed effects here.
    var owner: EffectOwner?
    /// Hands an event or cancel, sent by an effect running here under an ownership `term`
    /// (``EffectGroup/term``), to the order.
    var submit: @Sendable (_ address: Address, _ kind: EntryKind, _ codec: PayloadCodec, _ payload: [UInt8], _ term: UInt64) async -> Void
    /// An effect threw without a `catch:` handler.
    var effectFailed: @Sendable (_ address: Address, _ failure: EffectFailure) -> Void

    /// A context for replicas that never run effects: the coordinator's, a monitor's.
    static func passive(logger: Logger) -> ReplicaContext {
        ReplicaContext(
            dependencies: DependencyValues(),
            logger: logger,
            owner: nil,
            submit: { _, _, _, _, _ in },
            effectFailed: { _, _ in }
        )
    }
}

/// One flow instance held by a node or the coordinator, driven entry by entry in seq order.
///
/// Not thread-safe: the owner applies entries one at a time from its own serial context.
protocol FlowReplica: AnyObject {
    var address: Address { get }
    /// The seq of the last entry applied to this instance; 0 before the first.
    var lastSeq: UInt64 { get }
    /// Whether the instance changed since a hash of its state last began: a flag on the replica
    /// itself, so marking costs no hashing per entry.
    var isUndigested: Bool { get set }
    /// Its last digest as the combined digest holds it (``DigestBook``); nil before the first.
    var digested: DigestedState? { get set }
    var runningEffects: Int { get }
    /// The cancel ids of the effects running now (their descriptions, as a cancel entry names them).
    var runningCancelIDs: Set<String> { get }
    /// The same, each with the ownership term its effects run under.
    var runningCancelIDTerms: [String: UInt64] { get }
    /// Who may run the instance's effects, and its last takeover's seq: replicated state, the same
    /// on every replica after the same entry.
    var ownership: SnapshotChunkMessage.Ownership { get }

    /// Applies an ordered entry. Effects run only when `runEffects` (this process is the origin);
    /// a takeover's, only in the process it names.
    ///
    /// - Throws: ``ProtocolError`` when the payload does not decode: the entry is then skipped by
    ///   every replica alike, so they stay equal.
    func apply(_ entry: Entry, runEffects: Bool) throws

    func stateJSON() throws -> [UInt8]
    /// The state as JSON, to encode elsewhere with the encoder given (the state is a copy): a
    /// snapshot of a million instances makes one encoder, not a million.
    func stateJSONJob() -> @Sendable (JSONEncoder) throws -> [UInt8]
    /// Replaces the state with a snapshot's, decoded with `decoder` (one for a whole snapshot: a
    /// decoder per instance cost a million instances more than decoding them).
    func restore(stateJSON: [UInt8], lastSeq: UInt64, ownership: SnapshotChunkMessage.Ownership, decoder: JSONDecoder) throws
    /// Replaces the state with a snapshot's, kept as it came until the instance is first used
    /// (applied, read, resumed); hashing and encoding it meanwhile do not decode it on the owner's
    /// thread. A state that does not decode is found at that first use.
    func restoreLater(stateJSON: [UInt8], lastSeq: UInt64, ownership: SnapshotChunkMessage.Ownership)
    func digest() throws -> StateDigest
    /// The digest of the state as it is now, to compute elsewhere (the state is a copy).
    func digestJob() -> @Sendable () throws -> StateDigest
    /// Stops every effect; the replica is being dropped.
    func shutDown()
}

final class TypedReplica<F: Flow>: FlowReplica where F.State: Codable, F.Event: Codable {
    let address: Address
    private let flow: FlowReplicas<F>
    private let instance: FlowInstance<F>
    private(set) var lastSeq: UInt64 = 0
    var isUndigested = false
    var digested: DigestedState?
    private(set) var ownership = SnapshotChunkMessage.Ownership()
    /// A restored state not decoded yet (``restoreLater(stateJSON:lastSeq:ownership:)``): joining
    /// behind a million instances, decoding every state before the first entry took the node's
    /// loop 5 s, most of the instances untouched for long after.
    private var encodedState: [UInt8]?
    /// Whether the state is a restored one not decoded yet.
    var isStateEncoded: Bool { encodedState != nil }
    private var registration: TypedFlowRegistration<F> { flow.registration }
    private var logger: Logger { flow.context.logger }
    /// This process, when it runs effects (``ReplicaContext/owner``).
    private var process: EffectOwner? { flow.context.owner }

    init(address: Address, flow: FlowReplicas<F>) {
        self.address = address
        self.flow = flow
        instance = FlowInstance(
            flow: flow.flow, state: flow.registration.initialState(address.key), dependencies: flow.dependencies, runtime: nil,
            entropy: flow.entropy
        )
    }

    /// A replica alone, with a set of shared parts of its own (a client's copy of one instance).
    convenience init(registration: TypedFlowRegistration<F>, address: Address, context: ReplicaContext) {
        self.init(address: address, flow: FlowReplicas(registration: registration, context: context))
    }

    /// Makes the runtime when the instance's first effect starts.
    private func makeRuntime() -> EffectRuntime<F.Event> { flow.makeRuntime(for: address) }

    var runningEffects: Int { instance.runtime?.runningCount ?? 0 }
    var runningCancelIDs: Set<String> { Set(runningTypedCancelIDs.map(\.description)) }
    var runningCancelIDTerms: [String: UInt64] {
        Dictionary((instance.runtime?.activeCancelIDTerms ?? [:]).map { ($0.key.description, $0.value) }, uniquingKeysWith: max)
    }
    /// The cancel ids of the effects running now, with their types.
    var runningTypedCancelIDs: Set<CancelID> { instance.runtime?.activeCancelIDs ?? [] }

    /// The instance's state.
    var state: F.State {
        decodeRestoredState()
        return instance.state
    }

    /// Decodes a state restored for later into the instance, before its first use. One that does
    /// not decode (the coordinator runs another version of the flow) leaves the initial state,
    /// said once as an error; the divergence alarm then names the instance.
    private func decodeRestoredState() {
        guard let encoded = encodedState else { return }
        encodedState = nil
        do {
            instance.restore(try flow.stateDecoder.decode(F.State.self, from: Data(encoded)))
        } catch {
            logger.error(
                "a restored state does not decode; the instance goes on from its initial state",
                metadata: ["flowkit.address": "\(address)", "flowkit.error": "\(error)"]
            )
        }
    }

    func apply(_ entry: Entry, runEffects: Bool) throws {
        decodeRestoredState()
        defer { lastSeq = entry.seq }
        switch entry.kind {
        case .event:
            // An older version's event reads through the flow's migrations, as none, one or several.
            let events = try registration.events(of: entry.payload, codec: entry.codec, version: entry.version)
            let stamp = EntryStamp(seq: entry.seq, epoch: entry.epoch, committedAt: entry.committedAt)
            let origin = EffectOwner(node: entry.origin, session: entry.session)
            for event in events {
                if let sampler = flow.sampler, sampler.takesSample() { check(event, stamp: stamp, seq: entry.seq, sampler: sampler) }
                let outline = instance.applyEntry(event, stamp: stamp, mode: runEffects ? .origin : .replica, term: entry.seq, runtime: makeRuntime)
                note(outline, owner: origin)
                if outline.hasWork, !ownership.owners.contains(origin) { setOwners(ownership.owners + [origin]) }
            }
        case .cancel:
            let target = try CancelTarget(codec: entry.codec, payload: entry.payload)
            instance.runtime?.cancel(where: target.matches)
            ownership.workIDs.removeAll { target.matches($0.id) }
        case .cancelAll:
            instance.runtime?.cancelAll()
            setOwners([])
            ownership.workIDs = []
        case .takeover:
            try takeOver(Takeover(payload: entry.payload), at: entry)
        case .quarantined:
            break  // ReplicaSet skips these before they reach an instance
        }
    }

    /// Moves the instance's effects to the takeover's new owner, which starts what the flow's
    /// `resume` derives from the state (its parts marked with a cancel id only while the id
    /// still marks work: a cancelled effect is not started again); every other process stops the instance's effects it runs
    /// (a node that was paused past its lease learns here that they moved). Every replica reduces
    /// what `resume` sends at once, whatever it knew of the owners (a client's copy of one
    /// instance, started from a query, knows none), so states stay equal.
    private func takeOver(_ takeover: Takeover, at entry: Entry) {
        instance.runtime?.cancelAll()
        ownership.fence = entry.seq
        let stamp = EntryStamp(seq: entry.seq, epoch: entry.epoch, committedAt: entry.committedAt)
        let resumes = process != nil && process == takeover.to
        let marking = ownership.workIDs.map(\.id)
        ownership.workIDs = []
        let outline = instance.resume(
            derive: registration.resume, keep: { marking.contains(CancelTarget($0)) }, stamp: stamp, mode: resumes ? .origin : .replica,
            term: entry.seq, runtime: makeRuntime
        )
        note(outline, owner: takeover.to)
        setOwners(outline.hasWork ? [takeover.to] : [])
    }

    /// Keeps ``SnapshotChunkMessage/Ownership/workIDs`` as the entry's effects changed them.
    private func note(_ outline: EffectOutline, owner: EffectOwner) {
        for (id, started) in outline.idChanges {
            let target = CancelTarget(id)
            ownership.workIDs.removeAll { $0.id == target }
            if started { ownership.workIDs.append(.init(target, owner: owner)) }
        }
    }

    private func setOwners(_ owners: [EffectOwner]) {
        guard owners != ownership.owners else { return }
        flow.owned?.replace(ownership.owners, with: owners)
        ownership.owners = owners
    }

    /// Reduces the entry twice from the current state, as a test store does for every event: two
    /// states mean a reducer that reads `Date()`, `UUID()`, a random number or a global, which no
    /// replica can reproduce. Said once per flow, with its name, before the divergence alarm.
    private func check(_ event: F.Event, stamp: EntryStamp, seq: UInt64, sampler: DeterminismSampler) {
        let (first, second) = instance.reduceTwice(event, stamp: stamp)
        guard (try? StateDigest(of: first)) != (try? StateDigest(of: second)) else { return }
        sampler.remaining = 0
        logger.critical(
            "NONDETERMINISTIC REDUCER: flow \(registration.name) gave two states for the same entry: it reads something other than its state, its event and its dependencies (Date(), UUID(), a random number, a global); replicas of it will diverge. Read @Dependency(\\.date), \\.uuid, \\.withRandomNumberGenerator instead",
            metadata: ["flowkit.address": "\(address)", "flowkit.seq": "\(seq)"]
        )
    }

    func stateJSON() throws -> [UInt8] {
        try stateJSONJob()(ReplicaSet.stateEncoder())
    }

    func stateJSONJob() -> @Sendable (JSONEncoder) throws -> [UInt8] {
        if let encodedState { return { _ in encodedState } }
        let state = instance.state
        return { encoder in Array(try encoder.encode(state)) }
    }

    func restore(stateJSON: [UInt8], lastSeq: UInt64, ownership: SnapshotChunkMessage.Ownership, decoder: JSONDecoder) throws {
        do {
            instance.restore(try decoder.decode(F.State.self, from: Data(stateJSON)))
        } catch {
            throw ProtocolError(.malformed, "the snapshot state of \(address) does not decode: \(error)")
        }
        encodedState = nil
        adopt(lastSeq: lastSeq, ownership: ownership)
    }

    func restoreLater(stateJSON: [UInt8], lastSeq: UInt64, ownership: SnapshotChunkMessage.Ownership) {
        encodedState = stateJSON
        adopt(lastSeq: lastSeq, ownership: ownership)
    }

    /// A restored instance's last seq and effects' owners; its work resumed if this process owns it.
    private func adopt(lastSeq: UInt64, ownership: SnapshotChunkMessage.Ownership) {
        self.lastSeq = lastSeq
        setOwners(ownership.owners)
        self.ownership.fence = ownership.fence
        self.ownership.workIDs = ownership.workIDs
        // This process learns from the snapshot that a takeover made it the owner (it joined, or
        // restarted from its own snapshot, after the takeover entry), or it fell behind what the
        // log kept and restores a snapshot while it runs, its effects stopped with the old
        // instances: it starts the work now, as applying the entries would have; what that sent
        // at once is in the state already. Only the work under ids it runs: the work of others'
        // later entries is theirs; work without an id, only as the instance's sole owner.
        if let process, ownership.owners.contains(process), ownership.fence > 0 || ownership.workIDs.contains(where: { $0.owner == process }) {
            let mine = ownership.workIDs.filter { $0.owner == process }.map(\.id)
            // The term a later takeover fences: the takeover's seq, or (no takeover yet) the
            // instance's last entry, after which any takeover comes.
            let term = ownership.fence > 0 ? ownership.fence : lastSeq
            decodeRestoredState()
            _ = instance.resume(
                derive: registration.resume, keep: { mine.contains(CancelTarget($0)) }, unmarked: ownership.owners == [process],
                stamp: EntryStamp(seq: term, epoch: 0, committedAt: 0), mode: .origin, term: term, reducingSends: false,
                runtime: makeRuntime
            )
        }
    }

    func digest() throws -> StateDigest {
        try StateDigest(of: state)
    }

    /// A restored state not decoded yet is decoded in the job, where it is hashed, and the
    /// instance keeps it encoded.
    func digestJob() -> @Sendable () throws -> StateDigest {
        if let encodedState { return flow.digestJob(stateJSON: encodedState) }
        let state = instance.state
        return { try StateDigest(of: state) }
    }

    func shutDown() {
        instance.runtime?.shutDown()
    }
}
