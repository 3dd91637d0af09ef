import CoreMetrics
import FlowKitCore
import ZeroMQ

/// What carrying out a node's actions needs of the place it runs: the process's sockets, its
/// background thread and its timers (``NodeProcessIO``), or the simulation's network and clock.
/// Each answers at once; hashing that finishes later comes back to the ``NodeInterpreter``.
protocol NodeIO: AnyObject {
    /// The time now, in microseconds.
    var now: UInt64 { get }
    /// The endpoint clients reach the node on, for its status.
    var clientEndpoint: String { get }
    /// Queues frames on coordinator `index`'s submit socket (HELLO, SUBMIT, NODE_REPORT); a full
    /// queue drops them, and the machine sends again after its retry interval.
    func submit(_ frames: [[UInt8]], to index: Int)
    /// Queues a NODE_REPORT for coordinator `index`, encoding it where it does not hold up the node.
    /// Sends a report, in `version` of the wire protocol (the coordinator's).
    func report(_ message: NodeReportMessage, to index: Int, speaking version: UInt8)
    /// Queues frames on coordinator `index`'s sync socket (RANGE, SNAPSHOT).
    func requestSync(_ frames: [[UInt8]], from index: Int)
    func reply(_ reply: ClientReply, to peer: RouterEnvelope)
    /// Entries were applied, in seq order; `progressSent` when clients watch the node's progress.
    func applied(_ entries: [Entry], progressSent: Bool)
    /// A snapshot was restored (`error` nil) or could not be.
    func restored(seq: UInt64, instances: Int, error: (any Error)?)
    /// Hashes digest jobs where they do not hold up the node; the results come back through
    /// ``NodeInterpreter/hashed(_:micros:)``.
    func hash(_ jobs: [ReplicaSet.DigestJob])
    /// Calls ``NodeInterpreter/wake()`` at `time` (µs).
    func wake(at time: UInt64)
    /// A report went out (the process flushes its hop trace).
    func reported()
}

/// Carries out a ``NodeMachine``'s actions over a ``NodeIO``, with the node's replicas: the one
/// place a node applies entries, restores snapshots, answers queries, and decides what its reports
/// say and when its instances are hashed, for the process (``NodeCore``) and the simulation alike.
final class NodeInterpreter<IO: NodeIO> {
    private(set) var machine: NodeMachine
    let replicas: ReplicaSet
    let io: IO
    /// Where the machine's log lines, counts and hop-trace notes go.
    let sink: ObservationSink
    /// A bug the simulation plants to prove its checks catch it; never set in a process.
    let injectedBug: InjectedBug?
    /// A wake-up is asked for the digest round's next slice (``hashNextSlice()``).
    private var wakeUpAsked = false

    init(machine: NodeMachine, replicas: ReplicaSet, io: IO, sink: ObservationSink, injectedBug: InjectedBug? = nil) {
        self.machine = machine
        self.replicas = replicas
        self.io = io
        self.sink = sink
        self.injectedBug = injectedBug
    }

    var counters: ClusterCounters { sink.counters }

    /// Feeds the machine an input and carries out what it asks for.
    func run(_ input: (inout NodeMachine) -> [NodeMachine.Action]) {
        carryOut(input(&machine))
    }

    /// Changes the machine without actions to carry out.
    func update(_ change: (inout NodeMachine) -> Void) {
        change(&machine)
        deliverObservations()
    }

    private func deliverObservations() {
        let observed = machine.takeObservations()
        if !observed.isEmpty { sink.deliver(observed) }
    }

    func carryOut(_ actions: [NodeMachine.Action]) {
        defer { deliverObservations() }
        for action in actions {
            switch action {
            case .submit(let frames):
                let index = machine.currentCoordinator
                if let frames = machine.speaking(frames, to: index) { io.submit(frames, to: index) }
            case .requestSync(let frames):
                let index = machine.currentCoordinator
                if let frames = machine.speaking(frames, to: index) { io.requestSync(frames, from: index) }
            case .switchCoordinator:
                break  // the sockets to send on follow the machine's choice
            case .greetEveryCoordinator(let frames):
                for index in machine.coordinators.indices {
                    if let frames = machine.speaking(frames, to: index) { io.submit(frames, to: index) }
                }
            case .reply(let reply, let peer):
                io.reply(reply, to: peer)
            case .apply(let entries):
                let everyones = injectedBug == .effectsOnEveryNode
                for entry in entries { replicas.apply(entry, runEffects: everyones || machine.isOwn(entry)) }
                io.applied(entries, progressSent: machine.hasProgressWatchers)
            case .restore(let seq, let instances):
                restore(seq: seq, instances: instances)
            case .answerQuery(let request, let address, let peer):
                io.reply(query(request: request, address: address), to: peer)
            case .answerStatus(let request, let peer):
                io.reply(.status(request: request, json: JSONFrame.encode(status())), to: peer)
            case .report:
                report()
                // What changed since is hashed once per report, for the next one: an instance that
                // changes all the time is hashed once a report, not once a tick.
                hashChangedInstances()
                io.reported()
            }
        }
    }

    /// A snapshot to join through: it replaces every instance.
    private func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance]) {
        do {
            try replicas.importStates(instances)
        } catch {
            io.restored(seq: seq, instances: instances.count, error: error)
            run { $0.restored(false, now: io.now) }
            return
        }
        io.restored(seq: seq, instances: instances.count, error: nil)
        run { $0.restored(true, now: io.now) }
    }

    private func query(request: UInt64, address: String) -> ClientReply {
        do {
            guard let replica = replicas.replica(at: try Address(parsing: address)) else {
                throw ProtocolError(.notFound, "\(address) has no state yet on \(machine.configuration.name): an instance is created by its first event")
            }
            return .state(
                request: request, applied: machine.applied, lastSeq: replica.lastSeq, digest: try replica.digest().bytes, state: try replica.stateJSON()
            )
        } catch {
            return .error(request: request, error as? ProtocolError ?? ProtocolError(.internalError, "\(error)"))
        }
    }

    func status() -> NodeStatus {
        NodeStatus(
            id: machine.configuration.id,
            name: machine.configuration.name,
            session: machine.session,
            clientEndpoint: io.clientEndpoint,
            epoch: machine.epoch,
            applied: machine.applied,
            knownHead: machine.knownHead,
            connected: machine.isConnected(now: io.now),
            instances: replicas.count,
            runningEffects: replicas.runningEffects,
            pendingSubmissions: machine.pendingSubmissions,
            waitingBehindGap: machine.waitingBehindGap,
            // Settled once caught up, the moment digests are compared: exact, unless many changed
            // instances wait, which are then hashed off the loop (``DigestBook/settle(held:)``).
            // While the node catches up, the digest stays within its hashing budget instead, so
            // that someone polling the status of a replaying node does not slow the replay down
            // (it cost a third of it).
            digest: (machine.applied >= machine.knownHead ? replicas.settleDigests() : replicas.combinedDigest(exact: false)).description,
            flows: machine.info.flows,
            rejected: counters.rejections,
            entriesSkipped: replicas.skippedEntries,
            coordinator: machine.currentEndpoints,
            staleSubmissions: counters.staleSubmissions.load,
            instancesAtRest: replicas.restingCount,
            instancesUnhashed: replicas.unhashedCount
        )
    }

    // MARK: Local snapshots

    /// Replaces every instance with a node's local snapshot's and follows the log from `seq`,
    /// where its copy started (``ReplicaSet/StateCopy``). Its instances are at different seqs up
    /// to the highest last seq among them: until there, an entry an instance holds already is
    /// skipped, and the node reports no digest.
    /// - Returns: How many states were migrated (``ReplicaSet/importStates(_:)``), and the seq
    ///   from which every instance is as the log says.
    @discardableResult
    func resume(fromLocalSnapshot instances: [SnapshotChunkMessage.Instance], seq: UInt64) throws -> (migrated: Int, consistentFrom: UInt64) {
        let migrated = try replicas.importStates(instances)
        let consistentFrom = instances.reduce(seq) { max($0, $1.lastSeq) }
        replicas.skipsAppliedEntriesUpTo = injectedBug == .fuzzyRestoreAppliesEntriesTwice ? 0 : consistentFrom
        update { $0.resumeFollowing(from: seq, consistentFrom: consistentFrom) }
        return (migrated, consistentFrom)
    }

    /// ``resume(fromLocalSnapshot:seq:)`` from a base and the deltas after it, merged
    /// (``LocalSnapshots/load(from:)``), and keeps the changes from there for the next delta: as
    /// many as `chain` has room for, or every instance when states were migrated from an older
    /// build (the next snapshot holds them all, in this build's).
    /// - Returns: The seq from which every instance is as the log says.
    @discardableResult
    func resume(fromLocalSnapshots instances: [SnapshotChunkMessage.Instance], chain: LocalSnapshots.Chain) throws -> UInt64 {
        let (migrated, consistentFrom) = try resume(fromLocalSnapshot: instances, seq: chain.end ?? 0)
        replicas.trackChanges(everything: migrated > 0, keptAtMost: chain.room)
        return consistentFrom
    }

    // MARK: Reports and digests

    private func report() {
        updateGauges()
        let plan = machine.planReport()
        if plan.hashEverythingNow {
            _ = replicas.settleDigests()
        } else if plan.hashChangesNow {
            _ = replicas.combinedDigest(exact: false)
        }
        let changed = plan.catchingUp ? [:] : replicas.takeChanged(hashing: false)
        var summary = NodeReport(
            name: machine.configuration.name,
            digest: replicas.lastCombinedDigest.description,
            digests: [:],
            instances: replicas.count,
            runningEffects: replicas.runningEffects,
            effectsLost: 0,
            pendingSubmissions: machine.pendingSubmissions,
            connected: machine.isConnected(now: io.now),
            digestSeq: !plan.catchingUp && replicas.digestsAreCurrent ? plan.applied : 0
        )
        summary.unreadable = machine.unreadable
        summary.instancesAtRest = replicas.restingCount
        summary.instancesUnhashed = replicas.unhashedCount
        summary.flowVersions = machine.info.flowVersions
        let message = NodeReportMessage(
            node: machine.configuration.id, applied: plan.applied, time: io.now, report: summary,
            digests: ReportedDigest.list(changed, versions: machine.info.flowVersions)
        )
        io.report(message, to: machine.currentCoordinator, speaking: machine.coordinatorProtocols[machine.currentCoordinator])
    }

    private func updateGauges() {
        let gauges = counters.gauges
        gauges.applied.record(Double(machine.applied))
        gauges.head.record(Double(machine.knownHead))
        gauges.lag.record(Double(machine.lag))
        gauges.runningEffects.record(Double(replicas.runningEffects))
        gauges.pendingSubmissions.record(Double(machine.pendingSubmissions))
        gauges.instances.record(Double(replicas.count))
    }

    /// Starts a round of hashing the instances changed since their last digest, for the next
    /// report (``ReplicaSet/startDigestRound(now:spreadOver:)``), spread over most of the report
    /// interval.
    private func hashChangedInstances() {
        replicas.startDigestRound(now: io.now, spreadOver: UInt64(machine.configuration.reportInterval.microseconds) * 4 / 5)
        hashNextSlice()
    }

    /// Hands the round's next slice to ``NodeIO/hash(_:)``: the node only copies the states and
    /// folds the digests back in, a slice at a time, so no turn of its loop holds up the messages
    /// for long. A slice not due yet is hashed when it is. None while the node is far behind (its
    /// digests would describe states long past).
    private func hashNextSlice() {
        guard machine.hashesDigests else { return }
        let now = io.now
        let jobs = replicas.nextDigestSlice(now: now)
        guard !jobs.isEmpty else {
            if let due = replicas.nextDigestSliceDue, due > now, !wakeUpAsked {
                wakeUpAsked = true
                io.wake(at: due)
            }
            return
        }
        io.hash(jobs)
    }

    /// The time ``NodeIO/wake(at:)`` was asked for came.
    func wake() {
        wakeUpAsked = false
        hashNextSlice()
    }

    /// What ``NodeIO/hash(_:)`` found, and the microseconds of CPU it took.
    func hashed(_ results: [ReplicaSet.DigestResult], micros: UInt64) {
        replicas.finishDigestJobs(results, hashingMicros: micros)
        hashNextSlice()
    }
}
