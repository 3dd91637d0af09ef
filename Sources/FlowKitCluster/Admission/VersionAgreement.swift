/// The version of each flow the cluster has agreed on, and the rule that holds newer ones back
/// (docs/VERSIONING.md, guarantee 4): the coordinator orders an event of flow F at version `v` only
/// when every live node that runs F writes `v` or later, so no live node meets an entry its build
/// cannot read. During a rolling upgrade the upgraded nodes' events are refused with
/// `versionNotAgreed` (their nodes retry them) until the last node of the older build is upgraded
/// or leaves; the older nodes' events go on, and the newer nodes read them through their steps.
///
/// The leader computes it from its membership (``Membership``): what each node said in its HELLO
/// (``NodeInfo/flowVersions``), for the nodes alive now.
struct VersionAgreement: Sendable, Equatable {
    /// For each flow some live node runs, the versions its live nodes write.
    var flows: [String: ClusterStatus.FlowVersions] = [:]
    /// Until then (µs) the leader has not heard from every live node: a node counts as live until
    /// the node timeout passes without a word from it, and a new leader has heard from none. So
    /// until then every flow is agreed at version 1 only.
    var settlesAt: UInt64 = 0
    /// The oldest wire protocol a live node speaks (this process's own when none is live): what
    /// the leader publishes in. Protocol 3 carries no flow version, so while it is below 4 every
    /// event above version 1 waits, of every flow: every node receives every entry.
    var oldestProtocol: UInt8 = WireHeader.spoken.upperBound
    /// The live nodes that speak ``oldestProtocol`` while it is below this build's, by name.
    var protocolBehind: [String] = []

    /// Throws `versionNotAgreed` when an event of `flow` at `version` is newer than the agreed one.
    func check(flow: String, version: UInt16, now: UInt64) throws {
        guard version > 1 else { return }
        if oldestProtocol < 4 {
            let who = protocolBehind.isEmpty ? "this coordinator" : protocolBehind.joined(separator: ", ")
            throw ProtocolError(
                .versionNotAgreed,
                "flow \"\(flow)\" at version \(version): \(who) speak\(protocolBehind.count == 1 ? "s" : "") wire protocol \(oldestProtocol), "
                    + "which carries no version above 1; it is ordered once every live node speaks protocol 4 (docs/VERSIONING.md)"
            )
        }
        if now < settlesAt {
            throw ProtocolError(
                .versionNotAgreed,
                "flow \"\(flow)\" at version \(version): this coordinator has just begun leading and has not heard from every node yet; "
                    + "versions above 1 are ordered in \((settlesAt - now) / 1_000) ms, once it has (docs/VERSIONING.md)"
            )
        }
        guard let versions = flows[flow], version > versions.agreed else { return }
        let who = versions.behind.isEmpty ? "every live node of it" : versions.behind.joined(separator: ", ")
        throw ProtocolError(
            .versionNotAgreed,
            "flow \"\(flow)\" at version \(version): \(who) still write\(versions.behind.count == 1 ? "s" : "") version \(versions.agreed); "
                + "it is ordered once every live node of the flow runs version \(version) (docs/VERSIONING.md, \"Rolling upgrade\")"
        )
    }
}

extension ClusterStatus {
    /// The versions the live nodes of one flow write (as their HELLOs say).
    public struct FlowVersions: Codable, Sendable, Equatable {
        /// The version the cluster orders: the lowest any live node of the flow writes.
        public var agreed: UInt16
        /// The highest one writes: above ``agreed`` while an upgrade is under way.
        public var newest: UInt16
        /// The live nodes at ``agreed`` while ``newest`` is above it (they hold it back), by name.
        public var behind: [String]

        public init(agreed: UInt16, newest: UInt16, behind: [String]) {
            self.agreed = agreed
            self.newest = newest
            self.behind = behind
        }
    }
}
