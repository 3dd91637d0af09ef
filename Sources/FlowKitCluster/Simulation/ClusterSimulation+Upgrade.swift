/// Which build of the simulation's flow each process runs (``SimulationFlow``, build 1, or
/// ``SimulationFlowV2``, build 2), and what each build's registry is in this run.
struct SimulationBuilds {
    var coordinators: [Int]
    var nodes: [Int]
    let bug: InjectedBug?

    init(options: SimulationOptions) {
        coordinators = Array(repeating: 1, count: options.coordinators)
        nodes = Array(repeating: 1, count: options.nodes)
        bug = options.bug
    }

    /// A coordinator's: its replica runs the flow as a node does (the user's steps included), never
    /// the nodes' live dependencies.
    func registry(ofCoordinator index: Int) -> FlowRegistry {
        SimulationFlow.registry(build: coordinators[index], droppingAppends: bug == .skipAMigrationStep)
    }

    func registry(ofNode index: Int) -> FlowRegistry {
        SimulationFlow.registry(build: nodes[index], liveDependencies: bug == .liveReducerDependencies, droppingAppends: bug == .skipAMigrationStep)
    }

    /// What the log is replayed with at the end: the build every process runs by then.
    var final: FlowRegistry {
        SimulationFlow.registry(build: (coordinators + nodes).max() ?? 1, droppingAppends: bug == .skipAMigrationStep)
    }
}

extension ClusterSimulation {
    // MARK: A rolling upgrade (``SimulationOptions/upgrade``)

    /// The upgrade of docs/VERSIONING.md, "Rolling upgrade", in the middle of the active period:
    /// the coordinators one at a time (the standbys first, then whoever leads), then the nodes
    /// one at a time, 300 ms apart, among the faults.
    func planUpgrade(until end: UInt64) {
        var at = end / 4
        for _ in coordinators.indices {
            schedule.schedule(.fault(.upgradeCoordinator), at: at)
            at += 300_000
        }
        for index in nodes.indices {
            schedule.schedule(.fault(.upgradeNode(index)), at: at)
            at += 300_000
        }
    }

    /// A coordinator at build 1 runs build 2 from now on: a standby (or one that is down) while
    /// one is left, the leader last. One that runs is stopped and started again at once (its pause,
    /// if paused, ends with it); one that is down starts as build 2 at its pending restart.
    func upgradeCoordinator() async throws {
        let older = coordinators.indices.filter { builds.coordinators[$0] == 1 }
        guard let index = older.first(where: { coordinators[$0]?.machine == nil || !isReplicated }) ?? older.first else { return }
        builds.coordinators[index] = 2
        trace.note(at: now, "c\(index) runs build 2 from now on")
        guard coordinators[index] != nil else { return }
        try await inject(.crashCoordinator(index))
        try await startCoordinator(index)
    }

    /// The node runs build 2 from now on, as ``upgradeCoordinator()`` does for a coordinator.
    func upgradeNode(_ index: Int) async throws {
        builds.nodes[index] = 2
        guard nodes[index] != nil else { return }
        try await inject(.crashNode(index))
        startNode(index)
    }
}
