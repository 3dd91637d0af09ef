import Logging

/// The wire protocol a node speaks to each coordinator: its newest, until a coordinator refuses
/// it with `unsupportedVersion` in an older one it also speaks; then that one, until a new term
/// (a restarted or new leader may be of a newer build). docs/VERSIONING.md, "Upgrading the wire
/// protocol".
struct CoordinatorProtocols: Sendable, Equatable {
    private var older: [Int: UInt8] = [:]
    /// Whether a submission the older protocol cannot carry was logged (once a term).
    var untranslatableLogged = false

    subscript(index: Int) -> UInt8 {
        get { older[index] ?? WireHeader.spoken.upperBound }
        set { older[index] = newValue < WireHeader.spoken.upperBound ? newValue : nil }
    }
}

extension NodeMachine {
    /// Speaks `version` to the coordinator at `index` from now on.
    mutating func speak(_ version: UInt8, to index: Int) {
        coordinatorProtocols[index] = version
        observations.log(.notice,
            "the coordinator speaks an older wire protocol; speaking it to that coordinator until its next term",
            ["flowkit.protocol": "\(version)", "flowkit.coordinator.submit": "\(coordinators[index].submit)"]
        )
    }

    /// `frames`, as this build encodes them, in the protocol of the coordinator at `index`; nil
    /// (logged) when that protocol cannot carry them: an event of a flow version above 1 for a
    /// coordinator of protocol 3. It stays unacknowledged and is sent again, until its emit expires
    /// or the coordinator is upgraded (coordinators are upgraded first: docs/VERSIONING.md).
    mutating func speaking(_ frames: [[UInt8]], to index: Int) -> [[UInt8]]? {
        let version = coordinatorProtocols[index]
        guard version < WireHeader.version else { return frames }
        do {
            return try WireDialect.translate(frames, to: version)
        } catch {
            guard !coordinatorProtocols.untranslatableLogged else { return nil }
            coordinatorProtocols.untranslatableLogged = true
            observations.log(.error, "a submission cannot be said in the coordinator's wire protocol; upgrade the coordinators first", [
                "flowkit.protocol": "\(version)", "flowkit.error": "\(error)",
            ])
            return nil
        }
    }
}
