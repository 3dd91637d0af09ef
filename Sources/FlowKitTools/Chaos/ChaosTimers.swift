@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import Foundation
import Logging

/// Effects through a chaos run: one timer started at each node before the first fault, so every
/// node owns one and every crash, pause or partition past the lease moves some (docs/EFFECTS.md).
///
/// The end check asks two things. From the coordinator's log: every tick of a timer came from its
/// owner at the time (the node process whose toggle started it, then the one each takeover named),
/// so two owners' ticks never interleave. From a node: every timer still ticks, wherever it runs
/// now. Then the timers are stopped, so the cluster can go quiet for the convergence check.
struct ChaosTimers: Sendable {
    /// A timer taken over: how long it was silent, and how soon after the fault that took its
    /// owner down it ticked again at its new owner (entry times are the coordinator's clock).
    struct Resume: Sendable, Codable {
        var address: String
        var takeoverSeq: UInt64
        /// The fault that hit the old owner's node last before the takeover.
        var fault: FaultKind?
        /// From that fault to the first tick the new owner had ordered.
        var secondsFromFault: Double?
        /// From the old owner's last tick to the new owner's first.
        var silentSeconds: Double?
    }

    struct Result: Sendable, Codable {
        var timers = 0
        /// Ticks ordered, over every timer, in the part of the log still held.
        var ticks = 0
        /// Takeover entries of the timers' instances in the log.
        var takeovers = 0
        /// Ticks whose origin (node and session) was not the timer's owner when they were ordered.
        var ticksFromNonOwners = 0
        /// Timers that ticked at least twice while the end check watched them.
        var ticking = 0
        var resumes: [Resume] = []
        var problems: [String] = []

        var ownersHeld: Bool { ticksFromNonOwners == 0 }
        var allTicking: Bool { ticking == timers }
    }

    /// Each timer's address, by the node that starts it.
    let addresses: [UInt32: String]
    let logger: Logger

    init(run: String, nodes: [UInt32], logger: Logger) {
        addresses = Dictionary(uniqueKeysWithValues: nodes.map { ($0, "timer/\(run)-started-at-\($0)") })
        self.logger = logger
    }

    /// Starts every timer at its node: that node's process owns it.
    func start(clients: [UInt32: ClusterClient]) async throws {
        for (node, address) in addresses.sorted(by: { $0.key < $1.key }) {
            guard let client = clients[node] else { throw ChaosError("no client for node \(node)") }
            _ = try await client.emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: address)
        }
    }

    /// Watches every timer from one node until each has ticked twice, or `timeout` passes.
    func countTicking(client: ClusterClient, head: UInt64, timeout: Duration) async -> (ticking: Int, problems: [String]) {
        var first: [String: Int] = [:]
        var latest: [String: Int] = [:]
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for address in addresses.values {
                guard let state = try? await client.query(address, minApplied: first.isEmpty ? head : 0),
                    let timer = try? JSONDecoder().decode(TimerFlow.State.self, from: Data(state.json))
                else { continue }
                if first[address] == nil { first[address] = timer.secondsElapsed }
                latest[address] = timer.secondsElapsed
            }
            if ticked(first, latest).count == addresses.count { break }
            try? await Task.sleep(for: .milliseconds(250))
        }
        let ticking = ticked(first, latest)
        let stalled = addresses.values.sorted().filter { !ticking.contains($0) }.map {
            "\($0) did not tick twice in \(timeout) (seconds elapsed \(first[$0].map(String.init) ?? "?") → \(latest[$0].map(String.init) ?? "?"))"
        }
        return (ticking.count, stalled)
    }

    private func ticked(_ first: [String: Int], _ latest: [String: Int]) -> Set<String> {
        Set(first.keys.filter { latest[$0, default: 0] >= first[$0]! + 2 })
    }

    /// Stops every timer (a cancel, from any node: it stops the timer where it runs).
    func stop(client: ClusterClient) async throws {
        for address in addresses.values.sorted() {
            _ = try await client.emit(json: #"{"stop":{}}"#, to: address)
        }
    }

    /// Reads the log from its first held seq through `head`: whose ticks were ordered when.
    func auditOwners(syncEndpoint: String, head: UInt64, faults: [FaultRecord], into result: inout Result) async throws {
        let reader = try await LogReader(syncEndpoint: syncEndpoint, logger: logger)
        defer { Task { await reader.close() } }
        let first = try await reader.firstAvailableSeq(head: head)
        let ours = Set(addresses.values)
        var owners: [String: EffectOwner] = [:]
        var lastTickAt: [String: UInt64] = [:]
        // Takeovers whose new owner has not ticked yet, with when the fault and the old owner's last
        // tick were.
        var awaiting: [String: (resume: Resume, faultAt: UInt64?, lastTickAt: UInt64?)] = [:]
        var problems: [String] = []
        var ticks = 0, takeovers = 0, fromNonOwners = 0
        var resumes: [Resume] = []
        try await reader.read(from: first, through: head) { entry in
            guard ours.contains(entry.address) else { return }
            let origin = EffectOwner(node: entry.origin, session: entry.session)
            switch entry.kind {
            case .takeover:
                takeovers += 1
                let takeover = try Takeover(payload: entry.payload)
                owners[entry.address] = takeover.to
                let fault = faults.last { $0.target == "node-\(takeover.from.node)" && $0.startedAtMicros <= entry.committedAt }
                let resume = Resume(address: entry.address, takeoverSeq: entry.seq, fault: fault?.kind)
                awaiting[entry.address] = (resume, fault?.startedAtMicros, lastTickAt[entry.address])
            case .event:
                switch try? JSONDecoder().decode(TimerFlow.Event.self, from: Data(entry.payload)) {
                case .toggleTimerButtonTapped?:
                    owners[entry.address] = origin
                case .timerTick?:
                    ticks += 1
                    // Where the log was compacted past the start, the first tick names the owner.
                    let owner = owners[entry.address, default: origin]
                    owners[entry.address] = owner
                    if owner != origin {
                        fromNonOwners += 1
                        if problems.count < 10 { problems.append("seq \(entry.seq): a tick of \(entry.address) from \(origin); its owner was \(owner)") }
                    } else if case (var resume, let faultAt, let silentSince)? = awaiting.removeValue(forKey: entry.address) {
                        resume.secondsFromFault = faultAt.map { Self.seconds(from: $0, to: entry.committedAt) }
                        resume.silentSeconds = silentSince.map { Self.seconds(from: $0, to: entry.committedAt) }
                        resumes.append(resume)
                    }
                    lastTickAt[entry.address] = entry.committedAt
                default:
                    break
                }
            default:
                break
            }
        }
        result.ticks = ticks
        result.takeovers = takeovers
        result.ticksFromNonOwners = fromNonOwners
        result.resumes = resumes
        result.problems += problems
    }

    private static func seconds(from start: UInt64, to end: UInt64) -> Double {
        (Double(end) - Double(start)) / 1e6
    }
}
