@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKit
import FlowKitExamples
import FlowKitTools
import Foundation
import Logging
import Testing

/// The digests a process reports for its instances: rehashed within a time budget, so a flow whose
/// state grows large cannot spend the process's time rehashing itself, and never reported for a
/// seq whose state they do not describe.
@Suite struct ReplicaDigestTests {
    private func entry(_ seq: UInt64, id: String) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq,
            submittedAt: 0, committedAt: 0, address: "ledger/big",
            payload: Array(#"{"record":{"_0":"\#(id)"}}"#.utf8)
        )
    }

    @Test func everyReportedDigestDescribesTheStateAtItsSeqAndTheLastOneIsReported() async throws {
        var registry = FlowRegistry()
        registry.register(LedgerFlow.self, as: "ledger")
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "test"))
        var ids: [String] = []
        var reported: [UInt64: String] = [:]
        func report() {
            for (_, digest) in replicas.takeChanged() { reported[digest.seq] = digest.digest.description }
        }
        // A large state (hashing it takes a while), then small steps reported in quick succession:
        // the budget defers some of them.
        for seq in 1...20_000 as ClosedRange<UInt64> {
            ids.append("id-\(seq)")
            replicas.apply(entry(seq, id: ids.last!), runEffects: false)
        }
        var expected: [UInt64: String] = [:]
        expected[20_000] = try StateDigest(of: LedgerFlow.State(ids: ids)).description
        report()
        for seq in 20_001...20_020 as ClosedRange<UInt64> {
            ids.append("id-\(seq)")
            replicas.apply(entry(seq, id: ids.last!), runEffects: false)
            expected[seq] = try StateDigest(of: LedgerFlow.State(ids: ids)).description
            report()
        }
        #expect(reported[20_000] != nil)
        for (seq, digest) in reported { #expect(digest == expected[seq], "the digest reported for seq \(seq) is not its state's") }
        // A status query is exact at once; the periodic report catches up within the budget.
        #expect(replicas.combinedDigest(exact: true) == replicas.combinedDigest(exact: false))
        let deadline = ContinuousClock.now + .seconds(10)
        while reported[20_020] == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            report()
        }
        #expect(reported[20_020] == expected[20_020], "the last seq was reported with its state's digest")
    }

    /// Hashing off the owner's thread: jobs carry copies of the states at their seqs; what they
    /// find is reported for those seqs; a job that finishes after the instance was hashed again at
    /// a later seq changes nothing; a snapshot makes jobs out at the time stale.
    @Test func digestJobsDescribeTheStatesTheyCopied() throws {
        var registry = FlowRegistry()
        registry.register(LedgerFlow.self, as: "ledger")
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "test"))
        replicas.apply(entry(1, id: "a"), runEffects: false)
        let jobs = replicas.takeDigestJobs()
        #expect(jobs.map(\.seq) == [1])
        #expect(replicas.takeDigestJobs().isEmpty, "one batch at a time")
        #expect(!replicas.digestsAreCurrent)
        // The instance moves on while its job is out, and a status query hashes it at once.
        replicas.apply(entry(2, id: "b"), runEffects: false)
        let exact = replicas.combinedDigest(exact: true)
        let results = ReplicaSet.hash(jobs).results
        #expect(results[0].digest == (try StateDigest(of: LedgerFlow.State(ids: ["a"]))), "the job hashed the state it copied")
        replicas.finishDigestJobs(results, hashingMicros: 10)
        #expect(replicas.combinedDigest(exact: false) == exact, "the older digest did not replace the newer one")
        #expect(replicas.takeChanged(hashing: false).values.map(\.seq) == [2])
        #expect(replicas.digestsAreCurrent)
        // A snapshot replaces the instances: a job out at that moment is stale.
        replicas.apply(entry(3, id: "c"), runEffects: false)
        let stale = replicas.takeDigestJobs()
        try replicas.importStates([])
        let staleResults = ReplicaSet.hash(stale).results
        replicas.finishDigestJobs(staleResults, hashingMicros: 10)
        #expect(replicas.takeChanged(hashing: false).isEmpty)
    }

    /// A STATUS answered while a digest job is out, with nothing applied since it was taken: the
    /// exact digest must describe the state now, not the one before the job (two nodes at the same
    /// seq reported different digests when one of them had a job out).
    @Test func anExactDigestWhileAJobIsOutDescribesTheStateNow() throws {
        var registry = FlowRegistry()
        registry.register(LedgerFlow.self, as: "ledger")
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "test"))
        let reference = ReplicaSet(registry: registry, logger: Logger(label: "test"))
        replicas.apply(entry(1, id: "a"), runEffects: false)
        reference.apply(entry(1, id: "a"), runEffects: false)
        _ = replicas.combinedDigest(exact: true)
        replicas.apply(entry(2, id: "b"), runEffects: false)
        reference.apply(entry(2, id: "b"), runEffects: false)
        let jobs = replicas.takeDigestJobs()
        #expect(jobs.map(\.seq) == [2])
        #expect(replicas.combinedDigest(exact: true) == reference.combinedDigest(exact: true))
        replicas.finishDigestJobs(ReplicaSet.hash(jobs).results, hashingMicros: 10)
        #expect(replicas.combinedDigest(exact: false) == reference.combinedDigest(exact: true))
    }

    /// A round hashes every instance changed before it began once, a slice at a time, one slice out
    /// at a time; an instance that changes again meanwhile waits for the next round. Folded in
    /// slice by slice, the digests come to what hashing everything at once gives.
    @Test func aRoundHashesEachChangedInstanceOnceASliceAtATime() throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "test"))
        let reference = ReplicaSet(registry: registry, logger: Logger(label: "test"))
        func increment(_ seq: UInt64, _ key: Int) {
            let entry = Entry(
                seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq, submittedAt: 0, committedAt: 0,
                address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
            )
            replicas.apply(entry, runEffects: false)
            reference.apply(entry, runEffects: false)
        }
        let count = ReplicaSet.digestSlice * 2 + ReplicaSet.digestSlice / 2  // three slices, the last a short one
        for key in 0..<count { increment(UInt64(key + 1), key) }
        replicas.startDigestRound(now: 0, spreadOver: 0)
        var hashed: [Address] = []
        var seq = UInt64(count)
        while true {
            let slice = replicas.nextDigestSlice(now: 0)
            guard !slice.isEmpty else { break }
            #expect(slice.count <= ReplicaSet.digestSlice)
            #expect(replicas.nextDigestSlice(now: 0).isEmpty, "one slice out at a time")
            // The first instance of the slice changes while the slice is out.
            seq += 1
            increment(seq, Int(slice[0].address.key)!)
            hashed += slice.map(\.address)
            replicas.finishDigestJobs(ReplicaSet.hash(slice).results, hashingMicros: 1)
        }
        #expect(hashed.count == count)
        #expect(Set(hashed).count == count, "each instance once in the round")
        #expect(replicas.takeChanged(hashing: false).count == count)
        // What changed during the round is the next round's.
        replicas.startDigestRound(now: 0, spreadOver: 0)
        var next = 0
        while case let slice = replicas.nextDigestSlice(now: 0), !slice.isEmpty {
            next += slice.count
            replicas.finishDigestJobs(ReplicaSet.hash(slice).results, hashingMicros: 1)
        }
        #expect(next == 3)
        #expect(replicas.combinedDigest(exact: false) == reference.combinedDigest(exact: true))
    }
    @Test func aRoundSpreadsItsSlicesOverItsSpan() throws {
        let count = ReplicaSet.digestSlice * 2 + ReplicaSet.digestSlice / 2  // three slices, the last a short one
        let replicas = Self.counters(count)
        // Three slices over 3,000 µs from 10,000: one at 10,000, 11,000 and 12,000.
        replicas.startDigestRound(now: 10_000, spreadOver: 3_000)
        #expect(replicas.nextDigestSliceDue == 10_000)
        var hashed = 0
        for due: UInt64 in [10_000, 11_000, 12_000] {
            #expect(replicas.nextDigestSlice(now: due - 1).isEmpty, "not before it is due")
            let slice = replicas.nextDigestSlice(now: due)
            #expect(!slice.isEmpty)
            #expect(replicas.nextDigestSliceDue == nil, "nothing is due while a slice is out")
            hashed += slice.count
            replicas.finishDigestJobs(ReplicaSet.hash(slice).results, hashingMicros: 1)
        }
        #expect(hashed == count)
        #expect(replicas.nextDigestSliceDue == nil, "the round is done")
        // (Much later, the instances unchanged since would go to rest: a slice of another kind.)
        #expect(replicas.nextDigestSlice(now: 1_000_000).isEmpty)
    }

    /// Hashing is charged to the budget by the CPU it took, not by the time its thread waited: the
    /// background thread runs at nice 19, and on a loaded machine charging its waits spent the
    /// whole budget in one slice and ended rounds with instances unhashed.
    /// A report under load hashes the changes on the owner's thread only when all of them are
    /// expected to take a moment: a backlog of many is left whole to the rounds, which hash it
    /// elsewhere (hashed there to the end of the budget, it held a node's loop 50 ms at a time),
    /// and a few are hashed at once, so the report describes its seq exactly.
    @Test func aReportHashesChangesNowOnlyWhenTheyAllTakeAMoment() throws {
        let many = Self.counters(10_000)
        #expect(many.takeChanged().isEmpty, "none of 10,000 changes hashed on the owner's thread")
        #expect(!many.digestsAreCurrent)
        let few = Self.counters(5)
        #expect(few.takeChanged().count == 5)
        #expect(few.digestsAreCurrent)
    }

    @Test func hashingIsChargedItsCPUTimeNotItsWaits() throws {
        let digest = try StateDigest(of: 1)
        let jobs = try (0..<3).map { index in
            ReplicaSet.DigestJob(address: try Address(parsing: "counter/\(index)"), seq: 1, generation: 0) {
                usleep(30_000)  // waiting, as for a core: 90 ms of wall time in all
                return digest
            }
        }
        let started = ContinuousClock.now
        let (results, micros) = ReplicaSet.hash(jobs)
        #expect(results.count == 3)
        #expect(ContinuousClock.now - started >= .milliseconds(90))
        #expect(micros < 10_000, "charged \(micros) µs for 90 ms of waiting")
    }

    /// The coordinator's replica (like a node) hashes a round's later slices when they come due, on
    /// a timer: a round of three slices spread over 200 ms ends, and no sooner than its last slice is due.
    @Test func theCoordinatorsReplicaHashesEverySliceOfASpreadRound() async throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let replica = CoordinatorReplica(registry: registry, applied: 0, logger: Logger(label: "test"))
        let count = ReplicaSet.digestSlice * 2 + ReplicaSet.digestSlice / 2  // three slices, the last a short one
        await replica.applyNow(
            (0..<count).map { key in
                Entry(
                    seq: UInt64(key + 1), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(key + 1),
                    submittedAt: 0, committedAt: 0, address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
                )
            }
        )
        let started = ContinuousClock.now
        let first = await replica.takeChangedDigests(spreadOver: .milliseconds(200))
        #expect(first.changed.isEmpty, "nothing was hashed before the round")
        #expect(first.instances == count)
        // The third slice is due 133 ms into the round; a loaded machine (the whole suite at once)
        // may take far longer. A second call starts a round of what is left, so it waits for this
        // one to end first.
        while await !replica.isDigestRoundDone, ContinuousClock.now - started < .seconds(120) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(ContinuousClock.now - started >= .milliseconds(133), "the slices were spread, not hashed back to back")
        let changed = await replica.takeChangedDigests(spreadOver: .milliseconds(200)).changed.count
        #expect(changed == count, "every instance of the round was hashed")
    }
}

extension ReplicaDigestTests {
    /// Starts a round at `now` and hashes its slices while the clock stands still at `now` (a
    /// spread round would hand out one slice and wait); returns how many slices there were, each
    /// at most a restore's slice.
    static func hashRoundBackToBack(_ replicas: ReplicaSet, now: UInt64) -> Int {
        replicas.startDigestRound(now: now, spreadOver: 1_000_000)
        var slices = 0
        while true {
            let jobs = replicas.nextDigestSlice(now: now)
            if jobs.isEmpty { break }
            #expect(jobs.count <= DigestBook.restoreSlice)
            let (results, micros) = ReplicaSet.hash(jobs)
            replicas.finishDigestJobs(results, hashingMicros: micros)
            slices += 1
        }
        return slices
    }

    /// `count` counters, each changed once, none hashed yet; on the wall clock or `clock`.
    static func counters(_ count: Int, clock: @escaping () -> UInt64 = WallClock.micros) -> ReplicaSet {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let replicas = ReplicaSet(registry: registry, context: .passive(logger: Logger(label: "test")), logger: Logger(label: "test"), clock: clock)
        for key in 0..<count {
            replicas.apply(
                Entry(
                    seq: UInt64(key + 1), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(key + 1),
                    submittedAt: 0, committedAt: 0, address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
                ),
                runEffects: false
            )
        }
        return replicas
    }

    /// A restore of many instances is hashed elsewhere, slice after slice with no spacing and no
    /// budget, and an exact digest meanwhile hashes none of it on the owner's thread; once hashed,
    /// the combined digest is the source's. A small restore is hashed at once, as before.
    @Test func aLargeRestoreIsHashedElsewhereBackToBack() throws {
        let count = DigestBook.defaultHashedNowAtMost + 1_000
        let source = Self.counters(count)
        let restored = Self.counters(0)
        try restored.importStates(source.exportStates())
        _ = restored.combinedDigest(exact: true)
        #expect(!restored.digestsAreCurrent && restored.isHashingARestore, "an exact digest hashed the restore on the owner's thread")

        let slices = Self.hashRoundBackToBack(restored, now: 1_000)
        // (The exact digest above hashed what the budget allowed on the owner's thread.)
        #expect(slices > 1 && slices <= (count + DigestBook.restoreSlice - 1) / DigestBook.restoreSlice)
        #expect(restored.digestsAreCurrent && !restored.isHashingARestore)
        #expect(restored.combinedDigest(exact: false) == source.combinedDigest(exact: true))

        let small = Self.counters(0)
        try small.importStates(Self.counters(100).exportStates())
        #expect(small.combinedDigest(exact: true) == Self.counters(100).combinedDigest(exact: true))
        #expect(small.digestsAreCurrent && !small.isHashingARestore)
    }

    /// A report carries a bounded number of digests: a node that hashed a restored snapshot of a
    /// million instances reports them over many reports, each digest once.
    @Test func manyChangedDigestsGoOutOverSeveralReportsEachOnce() throws {
        let replicas = Self.counters(DigestBook.reportedAtOnce + 1_000)
        _ = replicas.combinedDigest(exact: true)
        let first = replicas.takeChanged(hashing: false)
        let second = replicas.takeChanged(hashing: false)
        #expect(first.count == DigestBook.reportedAtOnce && second.count == 1_000)
        #expect(Set(first.keys).isDisjoint(with: second.keys))
        #expect(replicas.takeChanged(hashing: false).isEmpty)
    }

    /// A digest superseded before it went out is not reported: only the newest of an instance, once,
    /// even when the older waits among many for a later report; hashing the same state again
    /// reports nothing more.
    @Test func aSupersededDigestIsNotReported() throws {
        let replicas = Self.counters(DigestBook.reportedAtOnce + 10)
        _ = replicas.combinedDigest(exact: true)
        // counter/0 is among the first taken, counter/\(last) among the ones left for the next report.
        let last = DigestBook.reportedAtOnce + 9
        for (offset, key) in [0, last].enumerated() {
            replicas.apply(
                Entry(
                    seq: UInt64(last + 2 + offset), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(last + 2 + offset),
                    submittedAt: 0, committedAt: 0, address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
                ),
                runEffects: false
            )
        }
        _ = replicas.combinedDigest(exact: true)
        _ = replicas.combinedDigest(exact: true)
        var reported: [Address: [UInt64]] = [:]
        while case let taken = replicas.takeChanged(hashing: false), !taken.isEmpty {
            for (address, changed) in taken { reported[address, default: []].append(changed.seq) }
        }
        #expect(reported.count == DigestBook.reportedAtOnce + 10)
        #expect(reported[try Address(parsing: "counter/0")] == [UInt64(last + 2)])
        #expect(reported[try Address(parsing: "counter/\(last)")] == [UInt64(last + 3)])
        #expect(reported.values.allSatisfy { $0.count == 1 })
    }
}
