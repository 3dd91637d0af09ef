import Dependencies

extension EffectRuntime {
    /// What one call of ``start(_:in:)`` produced.
    package struct Scope {
        package var mode: Mode
        /// The group new tasks join; created on the first task when `nil`.
        package var group: EffectGroup?
        /// Events sent synchronously (`.send`), in order, for the owner to process next.
        package var followUps: [Event] = []
        /// The dependencies the effects' tasks see; `nil` leaves them the creating task's.
        package var dependencies: DependencyValues?
        /// The term a group created here carries (``EffectGroup/term``).
        package var term: UInt64
        /// How many pieces of async work the effects had, started (``Mode/origin``) or left to
        /// the process that runs them (``Mode/replica``): every replica counts the same.
        package var work = 0
        package var hasWork: Bool { work > 0 }
        /// The cancel ids whose work started (`true`: a `.cancellable` around async work) or was
        /// cancelled (`false`: `.cancel(id:)`, `cancelInFlight`), in order: every replica sees the
        /// same, so a cluster knows which ids still mark work without running it.
        package var idChanges: [(id: CancelID, started: Bool)] = []

        package init(mode: Mode = .origin, group: EffectGroup? = nil, dependencies: DependencyValues? = nil, term: UInt64 = 0) {
            self.mode = mode
            self.group = group
            self.dependencies = dependencies
            self.term = term
        }
    }
}
