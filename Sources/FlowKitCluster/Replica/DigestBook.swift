import FlowKitCore

/// The digests of a ``ReplicaSet``'s instances and the rounds that keep them current: which
/// instances changed since they were hashed, each one's last digest and its term in the combined
/// digest, the slices handed out to hash elsewhere, and the hashing budget. The set owns one and
/// passes it the instances it holds (`held`): a job or a change of an instance the set no longer
/// holds (a snapshot replaced it) counts for nothing. Instances at rest (``RestingInstances``)
/// keep their terms in their records; a restored snapshot's are hashed from there.
final class DigestBook {
    /// Instances changed since a hash of their state last began, oldest change first. A deque: a
    /// slice is taken from the front, and an array's `removeFirst` moved every other element, so a
    /// round over a million changed instances (a population, a restore) cost a million moves per
    /// slice of 32, on the owner's thread.
    private var undigested = ShrinkingQueue<any FlowReplica>()
    /// Digests not reported yet (``takeChanged(hashing:held:)``).
    private var fresh = FreshDigests()
    /// The digest of every instance, combined order-independently and kept up to date as instances
    /// change, so a process with many instances need not rehash them all to report.
    private var combined = DigestAccumulator()
    /// Instances out in ``takeDigestJobs(limit:held:)``'s jobs, in the jobs' order, or records (not both).
    private var hashingElsewhere: [any FlowReplica] = []
    private var recordsElsewhere: [RestingInstances.Unhashed] = []
    /// The instances at rest, whose records hold their terms.
    private let resting: RestingInstances
    /// The hashing of a record's state, by its flow (``ReplicaSet`` knows the flows' types); nil
    /// for a flow not registered.
    var recordHash: (_ address: Address, _ state: [UInt8]) -> (@Sendable () throws -> StateDigest)? = { _, _ in nil }
    /// Instances left to hash in the current round (``startDigestRound(now:spreadOver:)``), when
    /// its next slice may go out and the time between slices (µs).
    private var roundLeft = 0
    private var nextSliceAt: UInt64 = 0
    private var sliceSpacing: UInt64 = 0
    private var budget = HashingBudget.digests()
    /// Instances that may go to rest once unchanged for ``RestCandidates/after`` µs.
    var candidates = RestCandidates(after: nil)
    /// Bumped when the instances are replaced (a snapshot): jobs of an earlier generation are stale.
    private var generation: UInt64 = 0
    /// Whether records at rest wait to be hashed or are out being hashed (a restored snapshot's):
    /// meanwhile slices of them go out back to back, first, outside the budget, and an exact digest
    /// hashes none on the owner's thread while more than ``hashedNowAtMost`` wait (a restored
    /// million hashed there took a joining node's loop 10 s, heartbeats and clients included).
    var isHashingARestore: Bool { resting.unhashed > 0 || !recordsElsewhere.isEmpty }
    /// Whether the changed instances go out slice after slice, outside the budget, until none is
    /// left (``settle(held:)`` found more waiting than the owner's thread hashes at once): the
    /// backlog a load leaves when it stops. A million populated instances hashed on a node's loop
    /// when the population ended held it 8 s, its reports and clients with it.
    private(set) var settling = false
    /// The most changed instances or records ``settle(held:)`` hashes on the owner's thread.
    var hashedNowAtMost = DigestBook.defaultHashedNowAtMost
    /// The owner's clock (µs), for the hashing budget: the wall clock in a process, the simulated
    /// one in a simulation, a test's own in a test.
    private let clock: () -> UInt64

    init(clock: @escaping () -> UInt64, resting: RestingInstances) {
        self.clock = clock
        self.resting = resting
    }

    /// An instance changed: it is hashed again in the next round, or when an exact digest is asked.
    func noteChanged(_ replica: any FlowReplica) {
        guard !replica.isUndigested else { return }
        replica.isUndigested = true
        undigested.append(replica)
    }

    /// Forgets every digest: the instances were replaced.
    func reset() {
        combined = DigestAccumulator()
        fresh = FreshDigests()
        undigested.removeAll()
        hashingElsewhere = []
        recordsElsewhere = []
        candidates.removeAll()
        roundLeft = 0
        settling = false
        generation += 1
    }

    /// The entries its queues' storage has room for (``ShrinkingQueue``: none left by a wave).
    var queuedRoom: Int { undigested.room + fresh.room + candidates.room }

    /// Whether records at rest are out being hashed (their places in the arena must stay put).
    var isHashingRecords: Bool { !recordsElsewhere.isEmpty }

    /// The digests computed since the last call, each with the seq of the state it describes: at
    /// most ``reportedAtOnce``, the rest left for the next calls.
    ///
    /// - Parameter hashing: Hash changed instances now, within the budget (an owner that hashes
    ///   off its thread, through ``takeDigestJobs(limit:held:)``, passes `false`).
    func takeChanged(hashing: Bool, held: HeldReplicas) -> [Address: ChangedDigest] {
        if hashing { refreshDigests(all: false, held: held) }
        return fresh.take(atMost: Self.reportedAtOnce)
    }

    /// The combined digest as last computed, without hashing anything now.
    var lastCombinedDigest: StateDigest { combined.digest }

    /// Whether every instance's digest describes its current state (none deferred, none in a job).
    var digestsAreCurrent: Bool { undigested.isEmpty && hashingElsewhere.isEmpty && !isHashingARestore }

    /// The combined digest of every instance.
    ///
    /// - Parameter exact: Hash every changed instance now (a status query); otherwise (a periodic
    ///   report) instances the budget defers count with their last digest.
    func combinedDigest(exact: Bool, held: HeldReplicas) -> StateDigest {
        refreshDigests(all: exact, held: held)
        return combined.digest
    }

    /// Brings the combined digest up to date with every change, as a status or an idle report asks:
    /// at once when at most ``hashedNowAtMost`` instances or records wait; otherwise none of them
    /// on the owner's thread, and the owner's digest rounds hash them elsewhere, slice after slice
    /// and outside the budget, until none is left. Returns the combined digest as it stands.
    func settle(held: HeldReplicas) -> StateDigest {
        if waiting <= hashedNowAtMost {
            refreshDigests(all: true, held: held)
        } else if !undigested.isEmpty {
            settling = true
        }
        return combined.digest
    }

    /// The instances and records whose latest change the combined digest does not hold yet.
    var waiting: Int { undigested.count + hashingElsewhere.count + resting.unhashed + recordsElsewhere.count }

    /// Rehashes the instances changed since their digests were last computed: with `all`, every
    /// one, those out in jobs too (until a job is back, its digests are from before); otherwise
    /// all of them if that is expected to take at most ``hashedUnderLoadAtMost`` (the budget
    /// permitting), else none: the rounds hash them elsewhere. A restore's records count only
    /// with `all`, and only while few wait.
    private func refreshDigests(all: Bool, held: HeldReplicas) {
        budget.refill(now: clock())
        if all, resting.unhashed <= hashedNowAtMost {
            for waiting in recordsElsewhere + resting.takeUnhashed(limit: .max) {
                guard let address = try? Address(parsing: waiting.address), let digest = try? recordHash(address, waiting.state)?() else { continue }
                record(waiting, address: address, digest: digest, term: DigestAccumulator.Term(address, digest))
            }
            let elsewhere = hashingElsewhere.filter { ($0.digested?.seq ?? 0) < $0.lastSeq }
            for replica in undigested.takeAll() + elsewhere { rehash(replica, held: held) }
        } else if budget.fits(undigested.count, within: Self.hashedUnderLoadAtMost) {
            while budget.hasRoom, let replica = undigested.popFirst() { rehash(replica, held: held) }
        }
    }

    /// Hashes one changed instance now, if the set still holds it, charging the budget.
    private func rehash(_ replica: any FlowReplica, held: HeldReplicas) {
        replica.isUndigested = false
        guard held[replica.address.description] === replica else { return }
        let started = clock()
        // Charged as a whole, hashing the state and folding it into the combined digest: the
        // fold hashes too, and counting only the first let twice the budget through.
        defer {
            let ended = clock()
            budget.charge(ended - min(started, ended), items: 1)
        }
        guard let digest = try? replica.digest() else { return }
        record(replica, seq: replica.lastSeq, digest: digest, term: DigestAccumulator.Term(replica.address, digest))
    }

    /// Records a digest, unless one of a later state is recorded already (a job that finished
    /// after a status query hashed the instance again). Only XORs and table updates: the hashing
    /// (the state's and its term's) happened before, off the owner's thread for jobs.
    private func record(_ replica: any FlowReplica, seq: UInt64, digest: StateDigest, term: DigestAccumulator.Term) {
        if let old = replica.digested {
            guard old.seq <= seq else { return }
            combined.toggle(old.term)
        }
        combined.toggle(term)
        let known = replica.digested.map { $0.seq == seq && $0.term == term } ?? false
        replica.digested = DigestedState(seq: seq, term: term)
        // The same digest again (a job back after a status query hashed it) is queued or sent already.
        guard !known else { return }
        fresh.append(replica, replica.address, ChangedDigest(seq: seq, digest: digest))
        if seq == replica.lastSeq { candidates.note(replica, seq: seq, at: clock()) }
    }

    /// Records the digest of a record at rest, handed out for hashing, unless it was woken meanwhile.
    private func record(_ record: RestingInstances.Unhashed, address: Address, digest: StateDigest, term: DigestAccumulator.Term) {
        guard resting.setTerm(term, at: record.place, lastSeq: record.lastSeq) else { return }
        combined.toggle(term)
        fresh.append(nil, address, ChangedDigest(seq: record.lastSeq, digest: digest))
    }

    /// Starts a round of hashing elsewhere: every instance changed since its last digest is hashed
    /// once, a slice at a time (``nextDigestSlice(now:held:)``), however often it changes meanwhile (one
    /// that changes all the time is hashed once a round, not once a slice).
    ///
    /// The slices are spread evenly over `span` µs from `now` rather than hashed back to back: a
    /// round of a thousand instances is a few milliseconds of work in each process at once (taking
    /// the states, hashing them on the background thread, folding the digests in), and on a
    /// machine whose cores are busy that burst, once a report interval, was where the tail of the
    /// latency was.
    func startDigestRound(now: UInt64, spreadOver span: UInt64) {
        roundLeft = undigested.count + resting.unhashed
        let slices = (roundLeft + Self.digestSlice - 1) / Self.digestSlice
        sliceSpacing = slices > 1 && !isHashingARestore && !settling ? span / UInt64(slices) : 0
        nextSliceAt = now
    }

    /// The next slice of the round, to hash elsewhere and hand back to
    /// ``finishDigestJobs(_:hashingMicros:)``; nothing while a slice is out, before the slice is
    /// due (``nextDigestSliceDue``), or while the budget is spent (which ends the round). Once the
    /// round is done, the instances due to rest (``RestCandidates``).
    func nextDigestSlice(now: UInt64, held: HeldReplicas) -> [DigestJob] {
        guard hashingElsewhere.isEmpty, recordsElsewhere.isEmpty else { return [] }
        guard roundLeft > 0 else { return takeRestJobs(now: now, held: held) }
        guard now >= nextSliceAt || settling else { return [] }
        let slice = min(roundLeft, isHashingARestore || settling ? Self.restoreSlice : Self.digestSlice)
        let jobs = takeDigestJobs(limit: slice, held: held)
        roundLeft = jobs.isEmpty ? 0 : roundLeft - slice
        nextSliceAt = now.addingReportingOverflow(sliceSpacing).overflow ? .max : now + sliceSpacing
        return jobs
    }

    /// Whether the round is over: every slice handed out has come back and none is left.
    var isDigestRoundDone: Bool { roundLeft == 0 && hashingElsewhere.isEmpty && recordsElsewhere.isEmpty }

    /// When the round's next slice is due (µs), or once it is over the next instances going to rest
    /// (their budget was spent), while none is out: its owner asks ``nextDigestSlice(now:held:)`` then.
    var nextDigestSliceDue: UInt64? {
        hashingElsewhere.isEmpty && recordsElsewhere.isEmpty ? (roundLeft > 0 ? nextSliceAt : candidates.resumesAt) : nil
    }

    /// Hands out the states of the `limit` instances changed longest ago to hash elsewhere, so the
    /// owner's thread, which applies entries and answers clients, never stalls hashing (a node did
    /// for up to 50 ms at a time, the budget's burst, and that was its p99). Nothing while jobs
    /// are out or the budget is spent; the states are copies (copy-on-write), taken now.
    ///
    /// - Parameter limit: At most this many: taking the jobs and folding their results back in
    ///   (``finishDigestJobs(_:hashingMicros:)``) happen on the owner's thread, about a microsecond
    ///   each, so a thousand at once held a node's loop up for a millisecond.
    func takeDigestJobs(limit: Int, held: HeldReplicas) -> [DigestJob] {
        budget.refill(now: clock())
        guard hashingElsewhere.isEmpty, recordsElsewhere.isEmpty else { return [] }
        if resting.unhashed > 0 { return takeRecordJobs(limit: limit) }
        guard budget.hasRoom || settling, !undigested.isEmpty else { return [] }
        // A copy of the few taken: a slice of the deque alive across the removal would copy it all.
        let taken = Array(undigested.prefix(limit))
        var jobs: [DigestJob] = []
        jobs.reserveCapacity(taken.count)
        for replica in taken where held[replica.address.description] === replica {
            replica.isUndigested = false
            jobs.append(DigestJob(address: replica.address, seq: replica.lastSeq, generation: generation, hash: replica.digestJob()))
            hashingElsewhere.append(replica)
        }
        undigested.removeFirst(taken.count)
        return jobs
    }

    /// Hands out the instances due to rest, each hashed again and encoded, within the rest budget
    /// (not the digests'): an instance rests once per change, so the work follows the changes, and
    /// a wave of them (a population's, a minute later) goes at a tenth of a thread.
    private func takeRestJobs(now: UInt64, held: HeldReplicas) -> [DigestJob] {
        var jobs: [DigestJob] = []
        for replica in candidates.takeDue(now: now, limit: Self.restoreSlice) where held[replica.address.description] === replica {
            jobs.append(DigestJob(address: replica.address, seq: replica.lastSeq, generation: generation, hash: replica.digestJob(), encode: replica.stateJSONJob()))
            hashingElsewhere.append(replica)
        }
        return jobs
    }

    /// Hands out records at rest that wait to be hashed (a restore's), outside the budget.
    private func takeRecordJobs(limit: Int) -> [DigestJob] {
        var jobs: [DigestJob] = []
        for record in resting.takeUnhashed(limit: limit) {
            guard let address = try? Address(parsing: record.address), let hash = recordHash(address, record.state) else { continue }
            jobs.append(DigestJob(address: address, seq: record.lastSeq, generation: generation, hash: hash))
            recordsElsewhere.append(record)
        }
        return jobs
    }

    /// Takes back what jobs found, each for the instance at its job's position (looked up by address,
    /// a restored million took 2 s of a node's loop), charging the time to its budget: the rest
    /// budget for instances going to rest, the digests' for a round's slice, none for a restore's
    /// records or a settling.
    ///
    /// - Returns: The instances of a rest slice, with the seq their jobs found them at and their
    ///   states encoded there: the set puts those still unchanged to rest.
    func finishDigestJobs(_ results: [DigestResult], hashingMicros: UInt64) -> [(replica: any FlowReplica, seq: UInt64, state: [UInt8])] {
        let out = hashingElsewhere
        let records = recordsElsewhere
        hashingElsewhere = []
        recordsElsewhere = []
        if results.contains(where: { $0.stateJSON != nil }) { candidates.charge(hashingMicros) } else if records.isEmpty, !settling { budget.charge(hashingMicros, items: results.count) }
        if undigested.isEmpty { settling = false }
        var resting: [(replica: any FlowReplica, seq: UInt64, state: [UInt8])] = []
        for result in results where result.generation == generation {
            if !records.isEmpty {
                guard records.indices.contains(result.position) else { continue }
                record(records[result.position], address: result.address, digest: result.digest, term: result.term)
            } else if out.indices.contains(result.position) {
                let replica = out[result.position]
                record(replica, seq: result.seq, digest: result.digest, term: result.term)
                if let state = result.stateJSON { resting.append((replica, result.seq, state)) }
            }
        }
        return resting
    }
}
