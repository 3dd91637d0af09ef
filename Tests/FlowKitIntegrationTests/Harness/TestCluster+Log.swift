import Synchronization
@_spi(Wire) import FlowKitCluster

extension TestCluster {
    /// The coordinator's log from `from` on, read through its sync socket (RANGE_REQUEST), as a
    /// node repairing a gap would.
    ///
    /// - Parameter coordinator: A replicated coordinator's id; by default the coordinator the
    ///   nodes were started with (or the leader, after ``readFromLeader()``).
    func readLog(from: UInt64 = 1, through last: UInt64, at coordinator: String? = nil) async throws -> [Entry] {
        let endpoints = coordinator.flatMap { id in state.withLock { $0.replicated?.endpoints[id] } } ?? coordinatorEndpoints
        guard let sync = endpoints?.sync else { throw HarnessError("no coordinator") }
        let dealer = try await RawDealer(endpoint: sync, logger: logger)
        defer { Task { await dealer.close() } }
        var entries: [Entry] = []
        var next = from
        var request: UInt64 = 1
        while next <= last {
            try await dealer.send(RangeRequest(request: request, from: next, to: last, maxCount: 10_000).frames)
            guard let reply = try await dealer.receive(timeout: .seconds(10)) else {
                throw HarnessError("the coordinator did not answer RANGE_REQUEST \(next)…\(last)")
            }
            let range = try RangeMessage(frames: reply)
            guard let tail = range.entries.last else { throw HarnessError("RANGE \(next)…\(last) came back empty") }
            entries += range.entries
            next = tail.seq + 1
            request += 1
        }
        return entries
    }

    /// Whether `coordinator`'s log no longer starts at seq 1: its RANGE from 1 is refused as
    /// compacted (`notFound`).
    func isCompacted(at coordinator: String) async throws -> Bool {
        guard let sync = state.withLock({ $0.replicated?.endpoints[coordinator]?.sync }) else { throw HarnessError("no coordinator \(coordinator)") }
        let dealer = try await RawDealer(endpoint: sync, logger: logger)
        defer { Task { await dealer.close() } }
        try await dealer.send(RangeRequest(request: 1, from: 1, to: 1, maxCount: 1).frames)
        guard let reply = try await dealer.receive(timeout: .seconds(10)) else { throw HarnessError("\(coordinator) did not answer RANGE_REQUEST 1") }
        if let error = try? ErrorReply(frames: reply) { return error.error.code == .notFound }
        _ = try RangeMessage(frames: reply)
        return false
    }
}
