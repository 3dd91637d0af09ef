import FlowKitCore
import Foundation

extension DigestBook {
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
