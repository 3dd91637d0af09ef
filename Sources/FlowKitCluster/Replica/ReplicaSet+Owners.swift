import FlowKitCore

/// Who may run each instance's effects, over the instances in use and at rest.
extension ReplicaSet {
    /// How many instances each process may run effects of.
    var ownerCounts: [EffectOwner: Int] { owned.counts }

    /// The instances whose effects `owner` may run, in address order.
    func instances(ownedBy owner: EffectOwner) -> [String] {
        guard owned.counts[owner] != nil else { return [] }
        var addresses = replicas.compactMap { $0.value.ownership.owners.contains(owner) ? $0.key : nil }
        resting.forEachOwned { address, ownership in
            if ownership.owners.contains(owner) { addresses.append(address) }
        }
        return addresses.sorted()
    }

    /// Each instance's last takeover, for those taken over.
    var fences: [String: UInt64] {
        var fences: [String: UInt64] = [:]
        for (address, replica) in replicas where replica.ownership.fence > 0 { fences[address] = replica.ownership.fence }
        resting.forEachOwned { address, ownership in
            if ownership.fence > 0 { fences[address] = ownership.fence }
        }
        return fences
    }
}
