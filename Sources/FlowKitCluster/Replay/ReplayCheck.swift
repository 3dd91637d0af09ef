import FlowKitCore
import Foundation
import Logging

/// Replays a recorded stretch of a cluster's log (a ``ReplaySample``) through this build's flows,
/// as Temporal's replayer replays recorded histories through new workflow code: run it in CI before
/// a release (docs/VERSIONING.md, "The replay check").
///
/// It restores the sample's start states through the flows' state steps, decodes every event
/// entry through their event steps and applies the log through the reducers, then compares each
/// instance's state with the recorded one (read through the state steps too, so a release that
/// reshapes the state compares like with like). It reports every entry that no longer decodes and
/// every instance that no longer ends where the cluster's build left it, which catches changes that
/// still decode but mean something else (two unlabelled values swapped, a reducer changed).
///
/// ```swift
/// let report = ReplayCheck(registry: registry).run(try ReplaySample(contentsOf: url))
/// #expect(report.passed, "\(report)")
/// ```
public struct ReplayCheck: Sendable {
    /// What a replay found.
    public struct Report: Sendable, Equatable, CustomStringConvertible {
        /// An entry, or a recorded state, this build does not read.
        public struct Unreadable: Sendable, Equatable {
            /// The entry's seq; for a state, the seq of the last entry applied to it.
            public var seq: UInt64
            public var address: String
            /// The version of the flow that wrote it.
            public var version: UInt16
            /// Why: the decoder's or the step's error, or the versions this build reads.
            public var reason: String
        }

        /// An instance whose replayed state is not the recorded one.
        public struct Mismatch: Sendable, Equatable {
            public var address: String
            /// The recorded state's digest, read by this build, and the replayed state's.
            public var recorded: String
            public var replayed: String
            /// Both states as this build encodes them, for the diff.
            public var recordedState: String
            public var replayedState: String
        }

        public var entries = 0
        public var instances = 0
        /// Entries that no longer decode, in seq order.
        public var undecodable: [Unreadable] = []
        /// Recorded states (at the start or the end) that no longer decode.
        public var unreadableStates: [Unreadable] = []
        public var mismatches: [Mismatch] = []

        public var passed: Bool { undecodable.isEmpty && unreadableStates.isEmpty && mismatches.isEmpty }

        public var description: String {
            var lines = [
                "\(passed ? "passed" : "FAILED"): \(entries) entries replayed over \(instances) instances; "
                    + "\(undecodable.count) entries do not decode, \(unreadableStates.count) states do not read, \(mismatches.count) states differ"
            ]
            for problem in undecodable { lines.append("entry \(problem.seq) (\(problem.address), version \(problem.version)) does not decode: \(problem.reason)") }
            for problem in unreadableStates {
                lines.append("the state of \(problem.address) after seq \(problem.seq) (version \(problem.version)) does not read: \(problem.reason)")
            }
            for mismatch in mismatches {
                lines.append("\(mismatch.address) ends in another state: recorded \(mismatch.recorded), replayed \(mismatch.replayed)")
                lines.append("  recorded: \(mismatch.recordedState.prefix(300))")
                lines.append("  replayed: \(mismatch.replayedState.prefix(300))")
            }
            return lines.joined(separator: "\n")
        }
    }

    let registry: FlowRegistry

    public init(registry: FlowRegistry) {
        self.registry = registry
    }

    /// Replays `sample`; never throws: what does not read is in the report.
    public func run(_ sample: ReplaySample) -> Report {
        var report = Report()
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "flowkit.replay-check", factory: { _ in SwiftLogNoOpLogHandler() }))
        let versions = ReadableVersions(registry)
        // Instances whose replay cannot be trusted: a start state or an entry did not read.
        var broken: Set<String> = []
        var restored: [SnapshotChunkMessage.Instance] = []
        for instance in sample.start {
            let record = SnapshotChunkMessage.Instance(
                address: instance.address, lastSeq: instance.lastSeq, state: Array(instance.state.utf8), stateVersion: instance.version
            )
            do {
                if let unreadable = versions.unreadable(record) { throw unreadable }
                _ = try stateDigest(instance)
                restored.append(record)
            } catch {
                report.unreadableStates.append(.init(seq: instance.lastSeq, address: instance.address, version: instance.version, reason: "\(error)"))
                broken.insert(instance.address)
            }
        }
        // Each state was read above, so the import (through the steps) replaces nothing it cannot read.
        _ = try? replicas.importStates(restored)
        for record in sample.entries {
            let entry: Entry
            do {
                entry = try record.entry()
            } catch {
                report.undecodable.append(.init(seq: record.seq, address: record.address, version: record.version, reason: "\(error)"))
                broken.insert(record.address)
                continue
            }
            report.entries += 1
            if let reason = unreadableReason(entry, versions: versions) {
                report.undecodable.append(.init(seq: entry.seq, address: entry.address, version: entry.version, reason: reason))
                broken.insert(entry.address)
                continue
            }
            replicas.apply(entry, runEffects: false)
        }
        report.instances = sample.end.count
        for instance in sample.end where !broken.contains(instance.address) {
            let recorded: StateDigest
            do {
                recorded = try stateDigest(instance)
            } catch {
                report.unreadableStates.append(.init(seq: instance.lastSeq, address: instance.address, version: instance.version, reason: "\(error)"))
                continue
            }
            let replayedJSON = (try? Address(parsing: instance.address)).flatMap { try? replicas.replica(at: $0)?.stateJSON() }
            let replayed = replayedJSON.flatMap { json in
                (try? Address(parsing: instance.address)).flatMap { try? registry.flow(for: $0).stateDigest(json, from: registry.flow(for: $0).version) }
            }
            guard replayed != recorded else { continue }
            let recordedState = (try? canonicalState(instance)) ?? instance.state
            report.mismatches.append(
                .init(
                    address: instance.address, recorded: "\(recorded)", replayed: replayed.map { "\($0)" } ?? "(no state)",
                    recordedState: recordedState, replayedState: replayedJSON.map { String(decoding: $0, as: UTF8.self) } ?? "(none)"
                )
            )
        }
        return report
    }

    /// Why an entry does not read in this build: a version it does not read, or an event that does
    /// not decode (through the steps, for an older version); nil when it reads.
    private func unreadableReason(_ entry: Entry, versions: ReadableVersions) -> String? {
        if let unreadable = versions.unreadable(entry) { return "\(unreadable)" }
        guard entry.kind == .event else { return nil }
        do {
            let flow = try registry.flow(for: try Address(parsing: entry.address))
            _ = try flow.check(entry.payload, codec: entry.codec, version: entry.version)
            return nil
        } catch {
            return "\(error)"
        }
    }

    private func stateDigest(_ instance: ReplaySample.Instance) throws -> StateDigest {
        try registry.flow(for: try Address(parsing: instance.address)).stateDigest(Array(instance.state.utf8), from: instance.version)
    }

    /// A recorded state as this build encodes it (through the steps).
    private func canonicalState(_ instance: ReplaySample.Instance) throws -> String {
        let json = try registry.flow(for: try Address(parsing: instance.address)).migrateState(Array(instance.state.utf8), from: instance.version)
        return String(decoding: json, as: UTF8.self)
    }
}
