/// How many of a flow's entries a process still reduces twice to check its reducer (the first
/// 16), shared by the flow's instances in one replica set: a cost at start, none after.
final class DeterminismSampler {
    var remaining = 16

    func takesSample() -> Bool {
        guard remaining > 0 else { return false }
        remaining -= 1
        return true
    }
}
