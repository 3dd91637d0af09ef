import Foundation

extension SimulatedNode {
    /// Has the work effects running here send a tick, under their ownership term, as the effect
    /// itself would: what a node paused or cut off past its lease sends when it goes on is what
    /// fencing must keep out of the log. In token order, so a seed replays exactly.
    func tickEffects(now: UInt64) {
        lastEffectTicks = now
        for key in 0..<8 {
            guard let address = try? Address(parsing: "sim/k\(key)"), let replica = replicas.replica(at: address) else { continue }
            // One work effect in sixteen ticks (by its token's number): enough of them on every node to
            // show takeovers and fencing, few enough that a seed stays quick.
            for (token, term) in replica.runningCancelIDTerms.sorted(by: { $0.key < $1.key }) where (Int(token.dropFirst()) ?? 0) % 16 == 0 {
                effectTicksSent += 1
                let tick = SimulationFlow.Event.tick(work: token, id: "x\(index).\(incarnation).\(effectTicksSent)")
                guard let payload = try? JSONEncoder().encode(tick) else { continue }
                interpreter.run { $0.submitFromEffect(address: address, kind: .event, codec: .json, payload: Array(payload), term: term, now: now) }
            }
        }
    }
}
