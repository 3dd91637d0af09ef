import FlowKitCore

extension ReplicaSet {
    // MARK: Digests (``DigestBook``)

    /// The digests computed since the last call, each with the seq of the state it describes.
    ///
    /// - Parameter hashing: Hash changed instances now, within the budget (an owner that hashes
    ///   off its thread, through ``takeDigestJobs(limit:)``, passes `false`).
    func takeChanged(hashing: Bool = true) -> [Address: ChangedDigest] { book.takeChanged(hashing: hashing, held: replicas) }

    /// The combined digest as last computed, without hashing anything now.
    var lastCombinedDigest: StateDigest { book.lastCombinedDigest }

    /// Whether every instance's digest describes its current state (none deferred, none in a job).
    var digestsAreCurrent: Bool { book.digestsAreCurrent || (injectedBug == .settledWithChangesUnhashed && book.settling) }

    /// ``DigestBook/settle(held:)``.
    func settleDigests() -> StateDigest { book.settle(held: replicas) }

    /// The instances and records whose latest change the combined digest does not hold yet.
    var unhashedCount: Int { book.waiting }

    /// Whether a restored snapshot's instances are still being hashed (``DigestBook/isHashingARestore``).
    var isHashingARestore: Bool { book.isHashingARestore }

    /// The combined digest of every instance (``DigestBook/combinedDigest(exact:held:)``).
    func combinedDigest(exact: Bool = true) -> StateDigest { book.combinedDigest(exact: exact, held: replicas) }

    /// ``DigestBook/startDigestRound(now:spreadOver:)``.
    func startDigestRound(now: UInt64, spreadOver span: UInt64) { book.startDigestRound(now: now, spreadOver: span) }

    /// ``DigestBook/nextDigestSlice(now:held:)``.
    func nextDigestSlice(now: UInt64) -> [DigestJob] { book.nextDigestSlice(now: now, held: replicas) }

    var isDigestRoundDone: Bool { book.isDigestRoundDone }
    var nextDigestSliceDue: UInt64? { book.nextDigestSliceDue }

    /// ``DigestBook/takeDigestJobs(limit:held:)``.
    func takeDigestJobs(limit: Int = .max) -> [DigestJob] { book.takeDigestJobs(limit: limit, held: replicas) }
}
