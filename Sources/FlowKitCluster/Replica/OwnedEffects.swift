/// How many instances of a replica set each process may run effects of (``FlowReplica/ownership``),
/// kept as the replicas change: a coordinator finds the owners that went down without walking
/// every instance, and the status says who owns how many.
final class OwnedEffects {
    private(set) var counts: [EffectOwner: Int] = [:]

    func replace(_ old: [EffectOwner], with new: [EffectOwner]) {
        for owner in old where !new.contains(owner) {
            counts[owner, default: 0] -= 1
            if counts[owner] == 0 { counts[owner] = nil }
        }
        for owner in new where !old.contains(owner) { counts[owner, default: 0] += 1 }
    }

    func removeAll() { counts = [:] }
}
