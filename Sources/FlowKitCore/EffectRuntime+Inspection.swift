extension EffectRuntime {
    /// The number of effect tasks still running.
    package var runningCount: Int { tasks.count }

    /// The cancel ids that have at least one running effect.
    package var activeCancelIDs: Set<CancelID> { tasks.activeCancelIDs }

    /// The cancel ids that have a running effect, each with its effects' ownership term
    /// (``EffectGroup/term``).
    package var activeCancelIDTerms: [CancelID: UInt64] { tasks.activeTerms }

    /// Suspends until the body of every started effect task has begun to run.
    ///
    /// The test store uses it so that a test clock advanced next finds the effects' sleeps: an effect
    /// that has begun runs straight into its first suspension.
    package func waitUntilStarted() async {
        await tasks.waitUntilStarted()
    }

    /// Suspends until no effect task is running.
    package func waitUntilIdle() async {
        await tasks.waitUntilIdle()
    }
}
