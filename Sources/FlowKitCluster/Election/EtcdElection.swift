import Foundation

/// What the election service holds, as one coordinator reads it.
package struct ElectionView: Sendable, Equatable {
    /// The leader, while its lease lives.
    package var leader: LeaderRecord?
    /// The coordinators that may lead (those in sync with the leader's log); `nil` until a leader
    /// first writes it, when every coordinator may.
    package var eligible: [String]?
    /// The last epoch any leader took.
    package var epoch: UInt32

    package func isEligible(_ id: String) -> Bool { eligible?.contains(id) ?? true }
}

/// The election's keys in etcd, and the transactions that change them.
///
/// Under the cluster's prefix (`/flowkit/cluster` by default, `--etcd-prefix`):
///
/// | key | value | written by |
/// | --- | --- | --- |
/// | `leader` | the ``LeaderRecord`` (JSON), attached to the leader's lease | a campaign, only if absent |
/// | `epoch` | the last epoch taken, decimal | a campaign, in the same transaction |
/// | `eligible` | the ids that may lead (JSON array) | the leader, guarded by its leader key |
///
/// A campaign reads `epoch` and `eligible`, then in one transaction, only if `leader` is still
/// absent and neither of the two changed since the read, puts `leader` (on the candidate's lease)
/// and `epoch + 1`: two candidates can never take the same epoch, and an epoch never repeats.
package struct EtcdElection: Sendable {
    package let client: EtcdClient
    package let prefix: String

    package init(client: EtcdClient, prefix: String) {
        self.client = client
        self.prefix = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
    }

    var leaderKey: String { prefix + "/leader" }
    var epochKey: String { prefix + "/epoch" }
    var eligibleKey: String { prefix + "/eligible" }

    /// Becomes the leader under `lease` if no one leads and the candidate is eligible, in an epoch
    /// above every earlier one and at least `candidate.epoch`.
    package func campaign(lease: Int64, candidate: LeaderRecord) async throws -> ElectionMachine.CampaignOutcome {
        let read = try await client.transaction(when: [], then: [.get(leaderKey), .get(epochKey), .get(eligibleKey)])
        let (leader, epoch, eligible) = (read.reads[0], read.reads[1], read.reads[2])
        if let leader { return .lost(leader: Self.decodeLeader(leader.value)) }
        if let ids = eligible.flatMap({ Self.decodeEligible($0.value) }), !ids.contains(candidate.id) { return .lost(leader: nil) }
        let next = max(Self.decodeEpoch(epoch?.value) &+ 1, candidate.epoch, 1)
        var record = candidate
        record.epoch = next
        let result = try await client.transaction(
            when: [
                .absent(leaderKey),
                .equal(epochKey, .modRevision(epoch?.modRevision ?? 0)),
                .equal(eligibleKey, .modRevision(eligible?.modRevision ?? 0)),
            ],
            then: [.put(leaderKey, Self.encode(record), lease: lease), .put(epochKey, Array(String(next).utf8))],
            otherwise: [.get(leaderKey)]
        )
        if result.succeeded { return .won(epoch: next) }
        return .lost(leader: result.reads.first.flatMap { $0.map { Self.decodeLeader($0.value) } ?? nil })
    }

    /// Writes the set of coordinators that may lead, if `leader` still leads (its record is the
    /// one in etcd). Returns whether it was written.
    package func setEligible(_ ids: [String], leader: LeaderRecord) async throws -> Bool {
        let ids = Array(Set(ids)).sorted()
        let value = (try? JSONEncoder().encode(ids)).map { [UInt8]($0) } ?? []
        return try await client.transaction(when: [.equal(leaderKey, .value(Self.encode(leader)))], then: [.put(eligibleKey, value)]).succeeded
    }

    /// What the service holds now, and the revision it was read at.
    package func read() async throws -> (ElectionView, revision: Int64) {
        let result = try await client.transaction(when: [], then: [.get(leaderKey), .get(epochKey), .get(eligibleKey)])
        var view = ElectionView(leader: nil, eligible: nil, epoch: 0)
        for keyValue in result.reads.compactMap({ $0 }) { fold(.init(kind: .put, keyValue: keyValue), into: &view) }
        return (view, result.revision)
    }

    /// The view now, then after every change, until the consumer stops. A broken watch is read
    /// and watched again every `retryEvery` (a change missed meanwhile shows in the fresh read);
    /// each failure to reach etcd is passed on, so the consumer knows.
    package func views(retryEvery: Duration = .milliseconds(100)) -> AsyncStream<Result<ElectionView, EtcdError>> {
        AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    do {
                        var (view, revision) = try await read()
                        continuation.yield(.success(view))
                        for try await events in client.watch(prefix + "/", prefix: true, fromRevision: revision + 1) {
                            for event in events {
                                fold(event, into: &view)
                                revision = max(revision, event.keyValue.modRevision)
                            }
                            continuation.yield(.success(view))
                        }
                    } catch let error as EtcdError {
                        continuation.yield(.failure(error))
                    } catch {
                        continuation.yield(.failure(EtcdError(kind: .unreachable, message: "\(error)")))
                    }
                    try? await Task.sleep(for: retryEvery)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func fold(_ event: EtcdWatchEvent, into view: inout ElectionView) {
        let value = event.kind == .put ? event.keyValue.value : nil
        switch event.keyValue.key {
        case leaderKey: view.leader = value.flatMap(Self.decodeLeader)
        case epochKey: view.epoch = Self.decodeEpoch(value)
        case eligibleKey: view.eligible = value.flatMap(Self.decodeEligible)
        default: break
        }
    }

    // MARK: Values

    static func encode(_ record: LeaderRecord) -> [UInt8] {
        // Sorted keys: the value is compared byte for byte by setEligible's guard.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(record)).map { [UInt8]($0) } ?? []
    }

    static func decodeLeader(_ value: [UInt8]) -> LeaderRecord? {
        try? JSONDecoder().decode(LeaderRecord.self, from: Data(value))
    }

    static func decodeEligible(_ value: [UInt8]) -> [String]? {
        try? JSONDecoder().decode([String].self, from: Data(value))
    }

    static func decodeEpoch(_ value: [UInt8]?) -> UInt32 {
        value.flatMap { UInt32(String(decoding: $0, as: UTF8.self)) } ?? 0
    }
}
