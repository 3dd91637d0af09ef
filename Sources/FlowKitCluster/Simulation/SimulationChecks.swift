import FlowKitCore
import Foundation
import Logging

/// One way a simulated run broke a promise.
package struct SimulationFailure: Sendable, CustomStringConvertible {
    package var check: String
    package var detail: String

    package var description: String { "\(check): \(detail)" }
}

/// The promises every seed is checked against, once every fault is healed and the cluster had
/// time to converge:
/// - the log is whole (seqs 1…head, none missing or repeated);
/// - nothing is ordered twice: every event appears in the log at most once, retries and
///   duplicated messages notwithstanding;
/// - nothing acknowledged is lost: every event a client was told is ordered is in the log, once,
///   at the seq it was told;
/// - every node applied every seq once, in order, and converged: its applied seq is the head and
///   its state's digest is that of the log replayed from scratch;
/// - an entry's effects would run only on the node and session that submitted it, and once;
/// - nothing a stranger submitted in a node's name is ordered (a SUBMIT speaks for the node its
///   connection said HELLO as);
/// - at the end, each node runs exactly the effects of its own entries that no cancel ordered
///   after them stopped;
/// - no divergence alarm: the digests the nodes report (hashed in slices, as the processes hash
///   them) agree wherever two describe the same instance after the same entry;
/// - a combined digest a node's report claims current (`digestSeq`, which monitors compare) is
///   that of the log replayed to that seq;
/// - every ordered event is in its instance's state, in the log's order;
/// - with an upgrade, events of version 2 are ordered once every process runs build 2.
///
/// With replicated coordinators, the log is the one the leader holds at the end, and also:
/// - no coordinator acknowledged or published while the election service named another leader
///   (fencing), and no log keeps an entry a leader wrote while its lease did not hold;
/// - someone leads at the end, everything it wrote is committed, and every coordinator holds the
///   same log.
struct SimulationChecks {
    let simulation: ClusterSimulation

    func failures() async -> [SimulationFailure] {
        var failures = simulation.history.violations.map { SimulationFailure(check: "applied in order", detail: $0) }
        failures += simulation.history.fencing.map { SimulationFailure(check: "only the leader acts", detail: $0) }
        failures += simulation.history.divergences.map { SimulationFailure(check: "no divergence alarm", detail: $0) }
        failures += simulation.history.reusedSeqs.map { SimulationFailure(check: "a seq holds one entry per term", detail: $0) }
        guard let disk = simulation.checkedDisk else {
            return failures + [SimulationFailure(check: "a leader at the end", detail: "no coordinator leads once every fault has been healed for \(simulation.options.settleSeconds) s")]
        }
        let log: [Entry]
        do {
            log = try Self.history(disk, others: simulation.disks)
        } catch {
            return failures + [SimulationFailure(check: "the log is whole", detail: "\(error)")]
        }
        failures += coordinatorsAgree(on: log)
        for (index, entry) in log.enumerated() where entry.seq != UInt64(index + 1) {
            failures.append(SimulationFailure(check: "the log is whole", detail: "position \(index + 1) holds seq \(entry.seq)"))
            break
        }
        var seqsOfToken: [String: [UInt64]] = [:]
        for entry in log {
            if let event = Self.event(entry) { seqsOfToken[SimulationFlow.token(of: event), default: []].append(entry.seq) }
        }
        for (token, seqs) in seqsOfToken.sorted(by: { $0.key < $1.key }) where token.hasPrefix("forged-") {
            failures.append(SimulationFailure(check: "only a node's connection speaks for it", detail: "a stranger's SUBMIT in a node's name is in the log: \(token) at seqs \(seqs)"))
        }
        for (token, seqs) in seqsOfToken.sorted(by: { $0.key < $1.key }) where seqs.count > 1 {
            failures.append(SimulationFailure(check: "nothing ordered twice", detail: "\(token) is in the log at seqs \(seqs)"))
        }
        for (request, emit) in simulation.history.emits.sorted(by: { $0.key < $1.key }) {
            guard let acknowledged = emit.acknowledged else { continue }
            let seqs = seqsOfToken[emit.token] ?? []
            if seqs.isEmpty {
                failures.append(
                    SimulationFailure(check: "nothing acknowledged lost", detail: "request \(request) (\(emit.token)) was acknowledged at seq \(acknowledged) and is not in the log")
                )
            } else if acknowledged != 0, seqs != [acknowledged] {
                failures.append(
                    SimulationFailure(check: "acknowledged at its seq", detail: "request \(request) (\(emit.token)) was acknowledged at seq \(acknowledged); the log has it at \(seqs)")
                )
            }
        }
        let head = UInt64(log.count)
        let reference = ReplicaSet(registry: simulation.builds.final, logger: Logger(label: "reference", factory: { _ in SwiftLogNoOpLogHandler() }))
        for entry in log {
            reference.apply(entry, runEffects: false)
            guard let claims = simulation.history.currentDigests[entry.seq] else { continue }
            let digest = "\(reference.combinedDigest(exact: true))"
            for (claimed, nodes) in claims.sorted(by: { $0.key < $1.key }) where claimed != digest {
                failures.append(
                    SimulationFailure(check: "a current digest describes its seq", detail: "node(s) \(nodes.sorted()) reported \(claimed) current at seq \(entry.seq); the log's is \(digest)")
                )
            }
        }
        let digest = reference.combinedDigest(exact: true)
        failures += eventsInTheirStates(log, replayed: reference)
        if simulation.options.upgrade, !log.contains(where: { $0.kind == .event && $0.version == 2 }) {
            failures.append(SimulationFailure(check: "an upgrade in the middle", detail: "no event of version 2 was ordered once every process ran build 2"))
        }
        for case let node? in simulation.nodes {
            if node.machine.applied != head {
                failures.append(SimulationFailure(check: "every node converged", detail: "node \(node.index) applied \(node.machine.applied) of \(head)"))
            } else if node.replicas.combinedDigest(exact: true) != digest {
                failures.append(SimulationFailure(check: "every node converged", detail: "node \(node.index) is at the head with digest \(node.replicas.combinedDigest(exact: true)); the log's is \(digest)"))
            }
        }
        // The coordinators' own replicas serve snapshots (to nodes, and to standbys that install
        // them) and reference digests: each holds the log's state too.
        for case let coordinator? in simulation.coordinators {
            let applied = await coordinator.replica.applied
            if applied != head {
                failures.append(SimulationFailure(check: "every coordinator's replica converged", detail: "\(coordinator.id) applied \(applied) of \(head)"))
            } else if await coordinator.replica.combinedDigest() != "\(digest)" {
                failures.append(
                    SimulationFailure(
                        check: "every coordinator's replica converged",
                        detail: "\(coordinator.id) is at the head with digest \(await coordinator.replica.combinedDigest()); the log's is \(digest)"
                    )
                )
            }
        }
        for entry in log where entry.origin != 0 {  // a takeover's effects run on the node it names
            let ran = simulation.history.effects[entry.seq] ?? []
            if ran.count > 1 || ran.contains(where: { UInt32($0.node + 1) != entry.origin || $0.session != entry.session }) {
                failures.append(
                    SimulationFailure(check: "effects on the origin only", detail: "seq \(entry.seq) from node \(entry.origin - 1) would run effects on \(ran.map { "node \($0.node)" })")
                )
            }
        }
        failures += runningEffects(log)
        return Self.abridged(failures)
    }

    /// Who owns each work effect, following the log: a `work` entry's origin process; a takeover
    /// moves every effect of its instance to its new owner. An effect is live from its `work`
    /// entry until a cancel by its token, or of every effect, is ordered.
    struct WorkOwners {
        var owner: [String: EffectOwner] = [:]
        var tokens: [String: [String]] = [:]
        var live: [String: Set<String>] = [:]
        /// Ticks ordered from a process that did not own their effect then.
        var misplaced: [String] = []

        init(_ log: [Entry]) {
            for entry in log {
                let from = EffectOwner(node: entry.origin, session: entry.session)
                switch entry.kind {
                case .event:
                    switch SimulationChecks.event(entry) {
                    case .work(let token)?:
                        owner[token] = from
                        tokens[entry.address, default: []].append(token)
                        live[entry.address, default: []].insert(token)
                    case .tick(let token, let id)? where owner[token] != from:
                        let expected = owner[token].map(\.description) ?? "nobody"
                        misplaced.append("tick \(id) of \(token) at seq \(entry.seq) came from \(from); its owner then was \(expected)")
                    default:
                        break
                    }
                case .cancel:
                    if let target = try? CancelTarget(codec: entry.codec, payload: entry.payload) {
                        live[entry.address] = live[entry.address]?.filter { !target.matches(CancelID($0)) }
                    }
                case .cancelAll:
                    live[entry.address] = nil
                case .takeover:
                    guard let takeover = try? Takeover(payload: entry.payload) else { continue }
                    for token in tokens[entry.address] ?? [] { owner[token] = takeover.to }
                default:
                    break
                }
            }
        }
    }

    /// Every live work effect runs on its owner, and nowhere else; its owner is a process that
    /// runs (a takeover moved it off any that went down); and every tick came from its effect's
    /// owner at the time (the old owner's, after a takeover, were fenced).
    private func runningEffects(_ log: [Entry]) -> [SimulationFailure] {
        var failures: [SimulationFailure] = []
        let owners = WorkOwners(log)
        for misplaced in owners.misplaced {
            failures.append(SimulationFailure(check: "an effect's events come from its one owner", detail: misplaced))
        }
        let running = Set(simulation.nodes.compactMap { $0.map { EffectOwner(node: UInt32($0.index + 1), session: $0.machine.session) } })
        for (address, tokens) in owners.live.sorted(by: { $0.key < $1.key }) {
            for token in tokens.sorted() where !running.contains(owners.owner[token]!) {
                failures.append(
                    SimulationFailure(
                        check: "every live effect has a running owner",
                        detail: "\(token) at \(address) is owned by \(owners.owner[token]!), which no longer runs: no takeover moved it"
                    )
                )
            }
        }
        for case let node? in simulation.nodes {
            let me = EffectOwner(node: UInt32(node.index + 1), session: node.machine.session)
            for key in 0..<8 {
                let address = "sim/k\(key)"
                let running = (try? Address(parsing: address)).flatMap { node.replicas.replica(at: $0)?.runningCancelIDs } ?? []
                let wanted = (owners.live[address] ?? []).filter { owners.owner[$0] == me }
                guard running != wanted else { continue }
                let missing = wanted.subtracting(running).sorted()
                let extra = running.subtracting(wanted).sorted()
                failures.append(
                    SimulationFailure(
                        check: "effects run on their owner until cancelled",
                        detail: "node \(node.index) at \(address): not running \(missing), running but should not \(extra)"
                    )
                )
            }
        }
        return failures
    }

    /// Every event of the log is in its instance's state, in the log's order, as the flow's reducer
    /// promises: a step that loses events breaks it however alike the replicas are.
    private func eventsInTheirStates(_ log: [Entry], replayed: ReplicaSet) -> [SimulationFailure] {
        struct Tokens: Decodable { var tokens: [String] }
        var logged: [String: [String]] = [:]
        for entry in log { if let event = Self.event(entry) { logged[entry.address, default: []].append(SimulationFlow.token(of: event)) } }
        return logged.sorted { $0.key < $1.key }.compactMap { address, tokens in
            let json = (try? Address(parsing: address)).flatMap { try? replayed.replica(at: $0)?.stateJSON() }
            let state = json.flatMap { try? JSONDecoder().decode(Tokens.self, from: Data($0)) }
            guard state?.tokens != tokens else { return nil }
            let missing = Set(tokens).subtracting(state?.tokens ?? []).sorted()
            return SimulationFailure(check: "every ordered event is in its state", detail: "\(address): \(missing.count) of \(tokens.count) missing \(missing.prefix(5))")
        }
    }

    /// An event entry's event, in version 1's shape whichever version wrote it.
    static func event(_ entry: Entry) -> SimulationFlow.Event? {
        guard entry.kind == .event else { return nil }
        guard entry.version >= 2 else { return try? JSONDecoder().decode(SimulationFlow.Event.self, from: Data(entry.payload)) }
        return (try? JSONDecoder().decode(SimulationFlowV2.Event.self, from: Data(entry.payload)))?.asVersion1
    }

    /// At most `limit` failures of each check, and how many more there were.
    static func abridged(_ failures: [SimulationFailure], limit: Int = 5) -> [SimulationFailure] {
        var kept: [SimulationFailure] = []
        var counts: [String: Int] = [:]
        for failure in failures {
            counts[failure.check, default: 0] += 1
            if counts[failure.check]! <= limit { kept.append(failure) }
        }
        for (check, count) in counts.sorted(by: { $0.key < $1.key }) where count > limit {
            kept.append(SimulationFailure(check: check, detail: "and \(count - limit) more"))
        }
        return kept
    }
}
