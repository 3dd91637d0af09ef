extension Effect {
    /// Delays this effect by `dueTime`; a newer debounced effect with the same `id` replaces one that
    /// has not started yet.
    ///
    /// The search-field pattern: every keystroke returns a debounced search, and only the one after
    /// the typing pauses runs.
    ///
    /// ```swift
    /// case .searchTextChanged(let text):
    ///     state.searchText = text
    ///     return .run { send in await send(.results(try await search(text))) }
    ///         .debounce(id: CancelID.search, for: .milliseconds(300), clock: clock)
    /// ```
    ///
    /// - Parameters:
    ///   - id: The cancel id shared by the debounced effects.
    ///   - dueTime: How long to wait before running.
    ///   - clock: The clock to wait on: inject one with `@Dependency(\.continuousClock)`.
    /// - Returns: The debounced effect.
    public func debounce<C: Clock>(
        id: some Hashable & Sendable,
        for dueTime: C.Duration,
        clock: C
    ) -> Self {
        guard !isNone else { return .none }
        return Self.concatenate(
            .run { _ in try await clock.sleep(for: dueTime) },
            self
        )
        .cancellable(id: id, cancelInFlight: true)
    }

    /// Lets this effect run at most once per `interval` for the given `id`.
    ///
    /// The first effect in a window runs at once. Within the window, a later effect is dropped, or,
    /// with `latest: true`, the newest one is kept and runs when the window ends.
    ///
    /// A throttle window belongs to the process that runs the effect: in a cluster, each origin node
    /// keeps its own.
    ///
    /// - Parameters:
    ///   - id: Names the window; effects with the same id share it.
    ///   - interval: The length of a window.
    ///   - clock: The clock that measures windows.
    ///   - latest: Whether to run the newest effect of a window at its end (`true`) or drop it.
    /// - Returns: The throttled effect.
    public func throttle<C: Clock>(
        id: some Hashable & Sendable,
        for interval: C.Duration,
        clock: C,
        latest: Bool
    ) -> Self where C.Instant: Sendable {
        guard !isNone else { return .none }
        let window = CancelID(ThrottleWindow(id: CancelID(id)))
        let pending = CancelID(ThrottlePending(id: CancelID(id)))
        let effect = self
        return Self(operation: .deferred { context in
            let now = clock.now
            let opensAt: C.Instant? = context.withSlot(window, as: C.Instant.self) { lastStart in
                if let start = lastStart, now < start.advanced(by: interval) {
                    return start.advanced(by: interval)
                }
                lastStart = now
                return nil
            }
            guard let opensAt else {
                // A new window: run now, and drop a newest-of-the-last-window still waiting.
                return .merge(.cancel(id: pending), effect)
            }
            guard latest else { return .none }
            return Self.concatenate(
                .run { _ in try await clock.sleep(until: opensAt, tolerance: nil) },
                Self(operation: .deferred { context in
                    context.withSlot(window, as: C.Instant.self) { $0 = opensAt }
                    return effect
                })
            )
            .cancellable(id: pending, cancelInFlight: true)
        })
    }
}

private struct ThrottleWindow: Hashable, Sendable { var id: CancelID }
private struct ThrottlePending: Hashable, Sendable { var id: CancelID }
