import Testing

/// Waits until `condition` holds, for at most three minutes: the unit tests run side by side, and
/// the simulation's seeds hold both of the pool's threads (two cores) for a minute or more of a
/// debug build, while effects need one to run (seen: no effect ran in 60 s).
func eventually(_ what: String, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(180)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("not within 180 s: \(what)")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
