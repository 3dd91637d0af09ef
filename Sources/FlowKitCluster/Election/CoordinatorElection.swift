import CoreMetrics
import Logging
import Synchronization

/// Runs one coordinator's ``ElectionMachine`` against etcd: it carries out the machine's requests,
/// feeds it the answers, the watched changes and the passing time, and reports each change of
/// role on ``roles``.
///
/// ``mayLead(now:)`` is what the coordinator asks, synchronously, before it acknowledges or
/// publishes anything as the leader.
package final class CoordinatorElection: Sendable {
    private let machine: Mutex<ElectionMachine>
    private let election: EtcdElection
    private let logger: Logger
    /// How often time is fed to the machine: the granularity of renewals and of stepping down.
    private let tickEvery: Duration
    private let requests: AsyncStream<ElectionMachine.Request>.Continuation
    private let pendingRequests: AsyncStream<ElectionMachine.Request>
    private let roleUpdates: AsyncStream<ElectionMachine.Role>.Continuation
    private let trouble = EtcdTrouble()
    private let metrics = ElectionMetrics()
    /// Every change of this coordinator's role, in order.
    package let roles: AsyncStream<ElectionMachine.Role>

    package init(settings: ElectionMachine.Settings, election: EtcdElection, logger: Logger, tickEvery: Duration = .milliseconds(20)) {
        self.machine = Mutex(ElectionMachine(settings: settings))
        self.election = election
        self.logger = logger
        self.tickEvery = tickEvery
        (pendingRequests, requests) = AsyncStream.makeStream(of: ElectionMachine.Request.self)
        (roles, roleUpdates) = AsyncStream.makeStream(of: ElectionMachine.Role.self)
    }

    /// Whether this coordinator may act as the leader now (``ElectionMachine/mayLead(now:)``).
    package func mayLead(now: UInt64 = LeaseClock.micros()) -> Bool {
        machine.withLock { $0.mayLead(now: now) }
    }

    package var role: ElectionMachine.Role { machine.withLock { $0.role } }

    /// Sets the lowest epoch this coordinator may lead in: above the last epoch in its log.
    package func setMinimumEpoch(_ epoch: UInt32) {
        machine.withLock { $0.minimumEpoch = epoch }
    }

    /// Takes part in the election until cancelled; then gives the lease back.
    package func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await request in self.pendingRequests { await self.carryOut(request) }
            }
            group.addTask {
                for await view in self.election.views() {
                    switch view {
                    case .success(let view):
                        self.trouble.recovered(self.logger)
                        self.feed { machine, now in machine.observed(leader: view.leader, eligible: view.isEligible(machine.settings.id), now: now) }
                    case .failure(let error):
                        self.trouble.failed("cannot watch the election", error, self.logger)
                    }
                }
            }
            group.addTask {
                self.feed { machine, now in machine.start(now: now) }
                while !Task.isCancelled {
                    try? await Task.sleep(for: self.tickEvery)
                    self.feed { machine, now in machine.tick(now: now) }
                }
            }
            await waitUntilCancelled()
            group.cancelAll()
        }
        // Give the seat back at once rather than let it wait out the lease; this task is
        // cancelled, so the request runs in one that is not.
        for action in machine.withLock({ $0.stop() }) {
            if case .request(.revokeLease(let lease)) = action {
                let client = election.client
                await Task.detached { try? await client.revoke(lease) }.value
            }
            if case .role(let role) = action { roleUpdates.yield(role) }
        }
        requests.finish()
        roleUpdates.finish()
    }

    /// Hands the machine's actions on under its lock: a tick and a view fed at once (as when a
    /// paused process wakes) must pass their roles on in the order the machine took them, or the
    /// coordinator is left following the older one (seeking, say, while the machine stands by).
    private func feed(_ input: (inout ElectionMachine, UInt64) -> [ElectionMachine.Action]) {
        machine.withLock { machine in
            for action in input(&machine, LeaseClock.micros()) {
                switch action {
                case .request(let request):
                    requests.yield(request)
                case .role(let role):
                    logger.notice("election: \(role)")
                    metrics.record(role)
                    roleUpdates.yield(role)
                }
            }
        }
    }

    private func carryOut(_ request: ElectionMachine.Request) async {
        let askedAt = LeaseClock.micros()
        do {
            switch request {
            case .grantLease:
                let seconds = machine.withLock { $0.settings.leaseSeconds }
                let lease = try await election.client.grantLease(ttl: seconds)
                trouble.recovered(logger)
                feed { machine, now in machine.granted(lease: lease.id, seconds: lease.ttl, askedAt: askedAt, now: now) }
            case .renewLease(let lease):
                let seconds = try await election.client.keepAlive(lease)
                trouble.recovered(logger)
                feed { machine, now in machine.renewed(seconds: seconds, askedAt: askedAt, now: now) }
            case .campaign(let lease, let candidate):
                let outcome = try await election.campaign(lease: lease, candidate: candidate)
                feed { machine, now in machine.campaigned(outcome, now: now) }
            case .revokeLease(let lease):
                try await election.client.revoke(lease)
            }
        } catch let error as EtcdError where error.kind == .leaseNotFound {
            feed { machine, now in machine.leaseLost(now: now) }
        } catch is CancellationError {
            return  // stopping
        } catch {
            trouble.failed("an election request failed", error, logger)
            feed { machine, now in machine.requestFailed(request, now: now) }
        }
    }
}

/// Logs etcd being unreachable once when it starts, every 10 s while it lasts, and once when it
/// ends: a request every 100 ms fails while etcd is down, and each would say the same.
private final class EtcdTrouble: Sendable {
    private let state = Mutex<(since: ContinuousClock.Instant, lastLogged: ContinuousClock.Instant, failures: Int)?>(nil)

    func failed(_ what: String, _ error: any Error, _ logger: Logger) {
        let now = ContinuousClock.now
        let log: (first: Bool, failures: Int)? = state.withLock { state in
            guard var current = state else {
                state = (now, now, 1)
                return (true, 1)
            }
            current.failures += 1
            defer { state = current }
            guard now - current.lastLogged >= .seconds(10) else { return nil }
            current.lastLogged = now
            return (false, current.failures)
        }
        guard let log else { return }
        logger.warning(
            log.first ? "\(what); retrying" : "etcd still unreachable; retrying",
            metadata: ["flowkit.error": "\(error)", "flowkit.failures": "\(log.failures)"]
        )
    }

    func recovered(_ logger: Logger) {
        guard let trouble = state.withLock({ state in defer { state = nil }; return state }) else { return }
        logger.notice("etcd answers again", metadata: ["flowkit.outage": "\(ContinuousClock.now - trouble.since)", "flowkit.failures": "\(trouble.failures)"])
    }
}

/// The election as Prometheus sees it: this coordinator's role, the term it knows, and how many
/// leaders it has seen take over.
private final class ElectionMetrics: Sendable {
    private let leading = Gauge(label: "flowkit_coordinator_leading")
    private let epoch = Gauge(label: "flowkit_coordinator_epoch")
    private let elections = CounterCell("flowkit_elections_total")
    private let lastEpoch = Atomic<UInt32>(0)

    func record(_ role: ElectionMachine.Role) {
        if case .leading = role { leading.record(1) } else { leading.record(0) }
        guard let leader = role.leader else { return }
        epoch.record(Double(leader.epoch))
        if lastEpoch.max(leader.epoch, ordering: .relaxed).oldValue < leader.epoch { elections.add(1) }
    }
}

private func waitUntilCancelled() async {
    let never = AsyncStream<Void> { _ in }
    for await _ in never {}
}
