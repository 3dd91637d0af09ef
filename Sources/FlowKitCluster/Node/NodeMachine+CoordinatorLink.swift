import Logging
import ZeroMQ

extension NodeMachine {
    // MARK: The coordinator link

    /// Takes what the coordinator link asks for as the node's own actions.
    mutating func adopt(_ linkActions: [CoordinatorLink.Action], now: UInt64) -> [Action] {
        var actions: [Action] = []
        // A join starts before anything is resent: submissions wait until it is done.
        let joinFirst = linkActions.filter { $0 == .joinThroughSnapshot } + linkActions.filter { $0 != .joinThroughSnapshot }
        for action in joinFirst {
            switch action {
            case .newTerm(let epoch, let previous):
                if previous != 0 {
                    observations.log(.notice, "the coordinator began a new term", ["flowkit.epoch": "\(epoch)"])
                    // A new term may be a coordinator of a newer build: speak this process's newest again.
                    coordinatorProtocols = CoordinatorProtocols()
                }
            case .rejoin(let head):
                actions += coordinatorLostEntries(head: head, now: now)
            case .reconnect:
                // The coordinator is back (or new): say hello and resend everything unacknowledged.
                choice.greeted(now: now)
                actions.append(hello)
                submissions.resendAll()
                actions += flush(now: now)
            case .helloAgain:
                choice.greeted(now: now)
                actions.append(hello)
                observations.log(.warning, 
                    "no heartbeat from the coordinator; emits wait or fail until it is reachable",
                    [
                        "flowkit.coordinator.publish": "\(choice.current.publish)",
                        "flowkit.coordinator.submit": "\(choice.current.submit)",
                    ]
                )
            case .noteHead(let head):
                actions += adopt(follower.noteHead(head, now: now), now: now)
            case .noteAnnouncedHead(let head):
                actions += adopt(follower.noteAnnouncedHead(head, now: now), now: now)
            case .joinThroughSnapshot:
                observations.log(.info, "joining through a snapshot")
                actions += adopt(follower.startSnapshot(now: now), now: now)
            }
        }
        return actions
    }

    /// A new coordinator term whose log ends before what this node applied: entries this node holds
    /// are gone from the order (an in-memory log, or a relaxed one after a machine crash). Keeping
    /// them would make this node diverge from every node that joins later, so it drops its state
    /// and rejoins from the coordinator's.
    private mutating func coordinatorLostEntries(head: UInt64, now: UInt64) -> [Action] {
        observations.log(.critical, 
            "the coordinator's log ends before what this node applied: entries were lost with the coordinator; rejoining from its state",
            ["flowkit.head": "\(head)", "flowkit.applied": "\(follower.applied)"]
        )
        observations.count(\.logLossesSeen, 1)
        (follower, consistentFrom) = (Self.follower(applied: 0, configuration: configuration, registry: admission.registry), 0)
        link.applied(epoch: 0)
        dropHeldForRestore()
        return adopt(follower.startSnapshot(now: now), now: now)
    }

    /// The node dropped its connections to the coordinator and made them again.
    mutating func reconnected(now: UInt64) -> [Action] {
        adopt(link.reconnected(), now: now)
    }

    /// Submits to `coordinator` from now on: says HELLO to it and resends what is unacknowledged.
    mutating func switchCoordinator(to coordinator: CoordinatorEndpoints, now: UInt64) -> [Action] {
        observations.log(.notice, "submitting to another coordinator", ["flowkit.coordinator.submit": "\(coordinator.submit)"])
        return [.switchCoordinator(coordinator)] + adopt(link.reconnected(), now: now)
    }
}
