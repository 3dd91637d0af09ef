/// What a node answers to `STATUS`, as JSON.
public struct NodeStatus: Codable, Sendable, Equatable {
    public var id: UInt32
    public var name: String
    public var session: UInt64
    public var clientEndpoint: String
    public var epoch: UInt32
    public var applied: UInt64
    public var knownHead: UInt64
    public var connected: Bool
    public var instances: Int
    public var runningEffects: Int
    public var pendingSubmissions: Int
    public var waitingBehindGap: Int
    public var digest: String
    public var flows: [String]
    public var rejected: [String: Int]
    public var entriesSkipped: Int
    /// The coordinator's endpoints as this node reaches them: where a ``RemoteFlow`` follows the
    /// log. Absent from nodes before this field existed.
    public var coordinator: CoordinatorEndpoints?
    /// Effects' submissions the coordinator refused because their instance had been taken over
    /// while this node was down, paused or cut off (docs/EFFECTS.md). Absent from older nodes.
    public var staleSubmissions: Int?
    /// Of ``instances``, those at rest: kept as compact records until their next use (restored
    /// from a snapshot, or unchanged for `rest-after-ms`). Absent from older nodes.
    public var instancesAtRest: Int?
    /// Of ``instances``, those whose latest change ``digest`` does not hold yet: 0 once the digest
    /// is exact at ``applied``. Absent from older nodes.
    public var instancesUnhashed: Int?
}
