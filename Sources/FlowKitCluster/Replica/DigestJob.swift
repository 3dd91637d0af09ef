import FlowKitCore
import Foundation

extension DigestBook {
    /// Instances hashed elsewhere at a time: taking their states and folding the digests back in
    /// happen on the owner's thread, a few microseconds each, and a thousand at once held a node's
    /// messages up for a millisecond. Slices of 128 still held the loop a few hundred µs, eight
    /// times a second; slices of 32 (a thousand instances a round: 32 slices, 25 ms apart) took the
    /// p99 at 20,000 events a second down by 7-9 % in interleaved runs.
    static let digestSlice = 32

    /// Instances a slice of a restore's hashing, or of those going to rest, holds.
    static let restoreSlice = 256

    /// The longest (µs, expected) a report under load hashes the changed instances on the owner's
    /// thread, to describe its applied seq exactly; a backlog that would take longer is left to the
    /// rounds. Reports hashed changes within the budget, as many as it allowed: with a million
    /// instances, a fifth of them changed in a step, each node's loop hashed for up to the
    /// budget's 50 ms in one go at every report (runs of 16-30 ms in a profile of the step).
    static let hashedUnderLoadAtMost: UInt64 = 2_000

    /// The most changed instances or records ``settle(held:)`` hashes on the owner's thread, by default.
    static let defaultHashedNowAtMost = 4_096

    /// The most digests one report carries (about 1.5 MB): a node that restored a snapshot of a
    /// million instances sent all of their digests in one report of about 50 MB, which the
    /// coordinator then compared in one go. A million go in about thirty reports.
    static let reportedAtOnce = 32_768

    /// A state to hash off the owner's thread: its instance, the seq it is at, and the work; for
    /// an instance going to rest, its encoding too.
    struct DigestJob: Sendable {
        let address: Address
        let seq: UInt64
        let generation: UInt64
        let hash: @Sendable () throws -> StateDigest
        var encode: (@Sendable (JSONEncoder) throws -> [UInt8])? = nil
    }

    /// What a ``DigestJob`` found, its term in the combined digest, and its job's place in its slice.
    struct DigestResult: Sendable {
        let position: Int
        let address: Address
        let seq: UInt64
        let generation: UInt64
        let digest: StateDigest
        let term: DigestAccumulator.Term
        /// The state as a snapshot encodes it, for an instance going to rest.
        var stateJSON: [UInt8]? = nil
    }

    /// Runs digest jobs where it is called; returns what they found and the microseconds of CPU it
    /// took. CPU, not wall time: the background thread runs at nice 19, and on a loaded machine
    /// charging the budget for the time it waited for a core spent the budget in one slice and
    /// ended the round with instances unhashed.
    static func hash(_ jobs: [DigestJob]) -> (results: [DigestResult], micros: UInt64) {
        let started = ThreadCPUClock.micros()
        var results: [DigestResult] = []
        results.reserveCapacity(jobs.count)
        var encoder: JSONEncoder?
        for (position, job) in jobs.enumerated() {
            guard let digest = try? job.hash() else { continue }
            let term = DigestAccumulator.Term(job.address, digest)
            var result = DigestResult(position: position, address: job.address, seq: job.seq, generation: job.generation, digest: digest, term: term)
            if let encode = job.encode {
                if encoder == nil { encoder = ReplicaSet.stateEncoder() }
                result.stateJSON = try? encode(encoder!)
            }
            results.append(result)
        }
        let ended = ThreadCPUClock.micros()
        return (results, ended - min(started, ended))
    }
}

/// The set's owner hands the jobs out and runs them (``DigestBook``).
extension ReplicaSet {
    typealias DigestJob = DigestBook.DigestJob
    typealias DigestResult = DigestBook.DigestResult
    static var digestSlice: Int { DigestBook.digestSlice }

    static func hash(_ jobs: [DigestJob]) -> (results: [DigestResult], micros: UInt64) { DigestBook.hash(jobs) }
}
