import ZeroMQ

/// Replicated coordinators in a simulation: each one's election against the simulated election
/// service, its standby copy of the leader's log, and the leader's sync socket answering FETCHes,
/// carried out as ``CoordinatorElection``, ``CoordinatorStandby`` and the ``SyncServer`` do.
extension ClusterSimulation {
    // MARK: The election

    /// Feeds an input to the coordinator's election machine and carries out what it asks.
    func feedElection(_ coordinator: SimulatedCoordinator, _ input: (inout ElectionMachine) -> [ElectionMachine.Action]) async throws {
        guard coordinator.election != nil else { return }
        for action in input(&coordinator.election!) {
            switch action {
            case .request(let request):
                ask(coordinator, .election(request))
            case .role(let role):
                trace.note(at: now, "\(coordinator.id): \(role)")
                try await change(coordinator, to: role)
            }
        }
    }

    /// Sends a request to the election service; unanswered after the client's timeout, it fails.
    func ask(_ coordinator: SimulatedCoordinator, _ request: SimulatedEtcd.Request) {
        let id = nextElectionRequest
        nextElectionRequest += 1
        coordinator.electionRequests[id] = (request, now)
        let link = SimulatedLink(.coordinator(coordinator.index), .etcd)
        for time in network.arrivals(now: now, link: link, lossy: false, using: &random) {
            schedule.schedule(.electionRequest(request, id: id, from: coordinator.index, incarnation: coordinator.incarnation), at: time)
        }
        schedule.schedule(.electionTimeout(id: id, coordinator: coordinator.index, incarnation: coordinator.incarnation), at: now + 2_000_000)
    }

    /// The election service's answer to a request.
    func take(_ answer: SimulatedEtcd.Answer, to request: SimulatedEtcd.Request, askedAt: UInt64, on coordinator: SimulatedCoordinator) async throws {
        switch answer {
        case .granted(let lease, let seconds):
            try await feedElection(coordinator) { $0.granted(lease: lease, seconds: seconds, askedAt: askedAt, now: now) }
        case .renewed(let seconds):
            try await feedElection(coordinator) { $0.renewed(seconds: seconds, askedAt: askedAt, now: now) }
        case .leaseNotFound:
            try await feedElection(coordinator) { $0.leaseLost(now: now) }
        case .campaigned(let outcome):
            try await feedElection(coordinator) { $0.campaigned(outcome, now: now) }
        case .eligibleWritten(let written):
            // Only for the term that asked: a later term writes its own.
            guard case .setEligible(let set, let leader) = request, coordinator.machine?.epoch == leader.epoch else { return }
            coordinator.interpreter!.eligibleWritten(set, written: written)
        case .revoked:
            break
        }
    }

    /// What the election service holds now, to every coordinator it can reach (its watches).
    func broadcastViews() {
        for index in coordinators.indices { sendView(to: index) }
    }

    func sendView(to index: Int) {
        guard let coordinator = coordinators[index], coordinator.isReplicated else { return }
        let (view, revision) = (etcd.view, etcd.revision)
        for time in network.arrivals(now: now, link: SimulatedLink(.etcd, .coordinator(index)), lossy: false, using: &random) {
            schedule.schedule(.electionView(view, revision: revision, to: index, incarnation: coordinator.incarnation), at: time)
        }
    }

    /// A change of role: lead from the local log, or copy the leader's (``CoordinatorRole``).
    private func change(_ coordinator: SimulatedCoordinator, to role: ElectionMachine.Role) async throws {
        switch role {
        case .leading(let record):
            do {
                try await coordinator.lead(
                    record, group: (members: coordinators.indices.map(SimulatedCoordinator.id), eligible: etcd.eligible, minInSync: options.minInSync),
                    now: now, bug: options.bug
                )
                trace.note(at: now, "\(coordinator.id): leading from its log's end \(coordinator.disk.log.lastSeq), committed \(coordinator.committed.head)")
            } catch {
                trace.note(at: now, "\(coordinator.id): could not start leading: \(error)")
            }
        case .standingBy(let leader):
            try await carryOut(coordinator.follow(leader, now: now), on: coordinator)
        case .seeking:
            try await carryOut(coordinator.follow(nil, now: now), on: coordinator)
        }
    }

    // MARK: The leader's sync socket

    /// A standby's FETCH: answered now, or held while there is nothing new (``SyncServer``), in
    /// place of the one it held for that standby.
    func serveFetch(_ fetch: FetchRequest, from peer: RouterEnvelope, on coordinator: SimulatedCoordinator) async throws {
        coordinator.heldFetches[fetch.id] = nil
        guard coordinator.machine != nil else {
            let leader = coordinator.following.map { "\($0) does" } ?? "no leader is known yet"
            let error = ProtocolError(.coordinatorUnavailable, "this coordinator does not lead; \(leader)")
            sendSyncAnswer(ErrorReply(request: fetch.request, error: error).frames, to: peer, from: coordinator)
            return
        }
        if !(try await answerFetch(fetch, from: peer, on: coordinator)) {
            coordinator.heldFetches[fetch.id] = (peer, fetch, now)
        }
    }

    /// The log grew, or time passed: answers the FETCHes held from the log (what it synced and
    /// what it is syncing), as far as there is something new or they waited long enough, without
    /// a turn through the machine (``SyncServer``'s answers from its feed).
    func recheckHeldFetches(_ coordinator: SimulatedCoordinator) {
        guard let machine = coordinator.machine else { return }
        // In id order: a dictionary's order differs from one run of a seed to the next.
        for id in coordinator.heldFetches.keys.sorted() {
            guard let held = coordinator.heldFetches[id] else { continue }
            let request = held.request
            let records = request.epoch == machine.epoch ? (try? coordinator.readOffered(
                from: request.end + 1, maxCount: coordinator.configuration.maxRangeCount, maxBytes: min(Int(request.maxBytes), 4 << 20)
            )) : nil
            if records?.isEmpty == true, now - held.since < 200_000 { continue }
            coordinator.heldFetches[id] = nil
            history.noteSent(records ?? [], from: request.end + 1, by: coordinator.id)
            let answer = FetchedMessage(request: request.request, epoch: request.epoch, committed: machine.committedHead, records: records ?? [])
            if coordinator.mayReplicate(bug: options.bug) { sendSyncAnswer(answer.frames, to: held.peer, from: coordinator) }
        }
    }

    /// Answers a FETCH; returns false to hold it.
    private func answerFetch(_ fetch: FetchRequest, from peer: RouterEnvelope, on coordinator: SimulatedCoordinator) async throws -> Bool {
        let frames: [[UInt8]]
        do {
            var answer: FetchAnswer?
            try coordinator.interpreter!.run { machine in
                let (fetched, actions) = try machine.fetch(fetch, firstSeq: coordinator.disk.log.firstSeq, now: now)
                answer = fetched
                return actions
            }
            guard let machine = coordinator.machine else { return true }
            let maxCount = coordinator.configuration.maxRangeCount
            let answered = try await SyncServer.fetched(
                answer!, to: fetch, committed: machine.committedHead, epoch: machine.epoch, mayHold: true, maxBytes: 4 << 20
            ) { from, maxBytes in
                let records = try coordinator.readOffered(from: from, maxCount: maxCount, maxBytes: maxBytes)
                history.noteSent(records, from: from, by: coordinator.id)
                return records
            }
            guard let answered else { return false }
            frames = answered
        } catch {
            let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
            sendSyncAnswer(ErrorReply(request: fetch.request, error: protocolError).frames, to: peer, from: coordinator)
            return true
        }
        if coordinator.mayReplicate(bug: options.bug) { sendSyncAnswer(frames, to: peer, from: coordinator) }
        return true
    }

    // MARK: The standby's copy

    /// The leader's answer to one of this standby's requests: a FETCHED, an ERROR, or a snapshot's
    /// chunk or range while it installs one (``CoordinatorStandby``).
    func receiveFromLeader(_ frames: [[UInt8]], on coordinator: SimulatedCoordinator) async throws {
        guard coordinator.machine == nil, coordinator.copy != nil else { return }
        do {
            let actions: [StandbyCopy.Action]
            switch try WireHeader.read(frames.first ?? [], expecting: .fetched, .error, .snapshotChunk, .range).0 {
            case .error: actions = coordinator.copy!.refused(try ErrorReply(frames: frames), now: now)
            case .snapshotChunk: actions = coordinator.copy!.received(try SnapshotChunkMessage(frames: frames), now: now)
            case .range: actions = coordinator.copy!.received(try RangeMessage(frames: frames), now: now)
            default: actions = try coordinator.copy!.received(try FetchedMessage(frames: frames), now: now)
            }
            try await carryOut(actions, on: coordinator)
        } catch {
            trace.note(at: now, "\(coordinator.id): an answer from the leader could not be used: \(error)")
        }
    }

    /// Carries out what the standby's copy asks for (``CoordinatorStandby``).
    func carryOut(_ actions: [StandbyCopy.Action], on coordinator: SimulatedCoordinator) async throws {
        for action in actions {
            switch action {
            case .send(var frames):
                guard let leader = coordinator.following, let index = Self.index(of: leader.id) else { continue }
                if options.bug == .reportReceivedAsDurable, var (_, reader) = try? WireHeader.read(frames[0], expecting: .fetch),
                    var fetch = try? FetchRequest(reader: &reader)
                {
                    fetch.durable = fetch.end  // the bug
                    frames = fetch.frames
                }
                send(
                    Message(parts: [coordinator.identity] + frames), to: .coordinatorSync(index), incarnation: coordinatorIncarnations[index],
                    from: .coordinator(coordinator.index)
                )
            case .append(let records, let through, let lastEpoch):
                let first = through - UInt64(records.count) + 1
                let write = coordinator.write(records.enumerated().map { (first + UInt64($0.offset), $0.element) })
                schedule.schedule(
                    .copyWritten(coordinator.index, incarnation: coordinator.incarnation, write: write, through: through, lastEpoch: lastEpoch),
                    at: syncDone(coordinator.disk)
                )
            case .truncate(let keep):
                coordinator.landWrites()
                try coordinator.disk.log.removeSuffix(after: keep)
                let lastEpoch = keep == 0 ? 0 : coordinator.disk.end.seq == keep ? coordinator.disk.end.epoch : 0
                trace.note(at: now, "\(coordinator.id): cut its log back to \(keep), where it agrees with the leader's")
                try await carryOut(coordinator.copy!.truncated(durable: keep, lastEpoch: lastEpoch, now: now), on: coordinator)
            case .commit(let through):
                await coordinator.applyCommitted(through: through)
            case .install(let seq, let epoch, let instances, let sessions):
                // The bug: the standby takes the snapshot's place in the log but none of its states.
                let states = options.bug == .installWithoutStates ? [] : instances
                try await coordinator.install(seq: seq, instances: states, sessions: sessions)
                trace.note(at: now, "\(coordinator.id): installed the leader's snapshot at \(seq) (\(states.count) instances)")
                try await carryOut(coordinator.copy!.installed(seq: seq, epoch: epoch, now: now), on: coordinator)
            }
        }
    }

    /// The coordinator an id names (`c1`: 1).
    static func index(of id: String) -> Int? {
        id.first == "c" ? Int(id.dropFirst()) : nil
    }
}
