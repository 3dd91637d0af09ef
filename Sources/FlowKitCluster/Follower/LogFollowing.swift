import ZeroMQ

/// A passive follower of the log, which applies entries and never submits: a state watcher, a
/// remote flow.
///
/// Each says how it applies entries and restores a snapshot; ``carryOut(_:)`` carries out the
/// follower's actions for both: requests go to the coordinator's sync socket, released entries to
/// ``apply(_:)``, and a snapshot that does not restore is asked for again. A node reads the same
/// actions in ``NodeMachine/adopt(_:now:)``, by the same rules, as actions of its own machine.
protocol LogFollowing: Actor {
    var follower: LogFollower { get set }
    /// A DEALER connected to the coordinator's sync socket, for ranges and snapshots.
    var syncSocket: AsyncSocket { get }

    /// Applies entries the follower released, in seq order.
    func apply(_ entries: [Entry])
    /// Replaces the instances with a snapshot's, taken at `seq`.
    ///
    /// - Throws: When the snapshot cannot be used; the follower asks for another.
    func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance]) throws
    /// Called after each list of actions was carried out; `restored` when a snapshot moved the
    /// applied seq (with or without entries after it).
    func followed(restored: Bool)
}

extension LogFollowing {
    /// Carries out what the log follower asks for.
    func carryOut(_ actions: [LogFollower.Action]) {
        var restored = false
        for action in actions {
            switch action {
            case .apply(let entries):
                apply(entries)
            case .requestRange(let request):
                send(request.frames)
            case .requestSnapshot(let request):
                send(request.frames)
            case .restore(let seq, let instances, let then):
                do {
                    try restore(seq: seq, instances: instances)
                } catch {
                    carryOut(follower.startSnapshot(now: WallClock.micros()))
                    return
                }
                apply(then)
                restored = true
            }
        }
        followed(restored: restored)
    }

    /// A request to the sync socket, in the protocol its coordinator speaks (requests carry no
    /// records: every version can say them).
    private func send(_ frames: [[UInt8]]) {
        _ = try? syncSocket.trySend(Message(parts: (try? WireDialect.translate(frames, to: follower.protocolVersion)) ?? frames))
    }

    /// Messages from the publish socket: entries under `#` and heartbeats.
    func followPublished(_ messages: [Message]) {
        let now = WallClock.micros()
        for message in messages { carryOut(follower.receive(published: message, now: now)) }
    }

    /// Replies from the sync socket.
    func followSync(_ messages: [Message]) {
        let now = WallClock.micros()
        for message in messages { carryOut(follower.receive(SyncReply(message), now: now)) }
    }

    /// Retries what went unanswered; run every tick.
    func tickFollower() {
        carryOut(follower.tick(now: WallClock.micros()))
    }
}
