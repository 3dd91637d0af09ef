/// What a node's reports say about its instances' digests, and when it hashes them: decisions on
/// how far behind the node is and whether it moved, which its interpreter carries out on the
/// replicas.
extension NodeMachine {
    /// A node this far behind the head hashes nothing for its reports until it has caught up: its
    /// digests would describe states the coordinator passed long ago, and the hashing would slow
    /// the catching up (a twentieth of a replay).
    static var catchingUpLag: UInt64 { 10_000 }

    /// How far the node's applied seq is behind the head it knows.
    var lag: UInt64 { knownHead - min(knownHead, applied) }

    /// Whether the node hashes its instances now: not while it catches up, nor before its
    /// instances are at one seq (``consistentFrom``).
    var hashesDigests: Bool { lag <= Self.catchingUpLag && applied >= consistentFrom }

    /// What the next report does with the digests.
    struct ReportPlan: Equatable, Sendable {
        /// The applied seq the report states.
        var applied: UInt64
        /// Far behind: the report carries no digests and claims none is current.
        var catchingUp: Bool
        /// Idle at the head (nothing applied since the last report), nothing competes with
        /// hashing: every digest is brought up to date (settled: at once if few changed, else off
        /// the loop outside the budget), so the reports describe the state exactly soon after a
        /// load stops instead of catching up at the budget's pace for seconds.
        var hashEverythingNow: Bool
        /// At the head, but it moved since the last report (a timer ticking): what changed is
        /// hashed now, within the hashing budget, so the report describes its applied seq
        /// exactly whenever the budget allows (one changed instance always fits).
        var hashChangesNow: Bool
    }

    /// Plans the report due now, and remembers what it states.
    mutating func planReport() -> ReportPlan {
        let atHead = applied >= knownHead && hashesDigests
        let plan = ReportPlan(
            applied: applied, catchingUp: !hashesDigests, hashEverythingNow: applied == lastReportedApplied && atHead,
            hashChangesNow: applied != lastReportedApplied && atHead
        )
        lastReportedApplied = applied
        return plan
    }
}
