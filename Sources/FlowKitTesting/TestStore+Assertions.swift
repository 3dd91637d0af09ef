import CustomDump
import FlowKitCore
import IssueReporting
import Synchronization

extension TestStore {
    /// Asserts that every effect has finished, waiting up to `timeout`, and that every event the
    /// effects sent was received.
    ///
    /// With exhaustivity on, effects still running after `timeout` fail the test (and are then
    /// cancelled); with it off they are cancelled quietly.
    public func finish(
        timeout: Duration? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        applyInbox()
        let runtime = self.runtime
        let inbox = self.inbox
        let deadline = ContinuousClock.now.advanced(by: timeout ?? self.timeout)
        var finished = false
        // Applying a sent event may start more effects: apply and wait until both the inbox and the
        // runtime are empty.
        while true {
            applyInbox()
            if runtime.runningCount == 0, !inbox.hasPosts {
                finished = true
                break
            }
            guard ContinuousClock.now < deadline else { break }
            _ = await waitForFirst(until: deadline, of: [
                { await runtime.waitUntilIdle() },
                { await inbox.waitForPost(until: deadline) },
            ])
        }
        if !finished {
            let count = runtime.runningCount
            if exhaustivity == .on {
                fail(
                    """
                    \(count) effect(s) still running at the end of the test. Every effect must finish: \
                    advance the test clock, send the event that cancels it, or cancel its task.
                    """,
                    at: location
                )
            }
            runtime.cancelAll()
            await runtime.waitUntilIdle()
        }
        reportEffectFailures(at: location)
        if !received.isEmpty, exhaustivity == .on {
            fail(
                """
                The store received \(received.count) event(s) that were not asserted:
                \(received.map { "  • " + String(customDumping: $0.event) }.joined(separator: "\n"))
                """,
                at: location
            )
        }
        received.removeAll()
    }

    /// Drops every received event that has not been asserted yet.
    public func skipReceivedEvents() {
        applyInbox()
        assertedState = received.last?.state ?? assertedState
        received.removeAll()
    }

    /// Drops every received event that has not been asserted yet: ``skipReceivedEvents()`` as TCA
    /// spells it (FlowKit's actions are events). With `strict`, a store with nothing to skip fails
    /// the test.
    public func skipReceivedActions(
        strict: Bool = true,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        applyInbox()
        if strict, received.isEmpty {
            fail("There were no received actions to skip.", at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column))
        }
        skipReceivedEvents()
    }

    /// Cancels every effect still running.
    public func skipInFlightEffects() async {
        runtime.cancelAll()
        await runtime.waitUntilIdle()
    }

    /// Changes how strictly the store asserts; the same as setting ``exhaustivity``.
    public func setExhaustivity(_ exhaustivity: Exhaustivity) {
        self.exhaustivity = exhaustivity
    }

    /// Changes how long the store waits for events and effects before failing.
    public func setTimeout(_ timeout: Duration) {
        self.timeout = timeout
    }

    // MARK: Events from effects

    /// Applies every event the effects have sent so far, in order, keeping each for `receive`.
    func applyInbox() {
        for (event, group) in inbox.takeAll() {
            instance.apply(event, stamp: nextStamp(), group: group) { reducedEvent, state in
                received.append(Received(event: reducedEvent, state: state))
            }
        }
    }

    /// Waits until every effect task started so far has begun to run, then lets them reach their
    /// first suspension, so that a test clock advanced next finds their sleeps.
    func settleEffects() async {
        let runtime = self.runtime
        _ = await waitWithTimeout(timeout) { await runtime.waitUntilStarted() }
        await Task.megaYield()
    }

    /// The next received event; with exhaustivity off, the next one that `matches`.
    func nextReceived(timeout: Duration, matching matches: (F.Event) -> Bool) async -> Received? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            applyInbox()
            if exhaustivity == .off, let index = received.firstIndex(where: { matches($0.event) }) {
                if index > 0 { assertedState = received[index - 1].state }
                received.removeFirst(index)
            }
            if exhaustivity == .on, !received.isEmpty { return received.removeFirst() }
            if exhaustivity == .off, let first = received.first, matches(first.event) { return received.removeFirst() }
            guard ContinuousClock.now < deadline else { return nil }
            await inbox.waitForPost(until: deadline)
        }
    }

    // MARK: Assertions

    func assertState(
        _ actual: F.State,
        after verb: String,
        _ event: F.Event,
        update: (@Sendable (inout F.State) throws -> Void)?,
        at location: SourceLocation
    ) {
        let previous = assertedState
        assertedState = actual
        var expected: F.State
        switch exhaustivity {
        case .on:
            expected = previous
        case .off:
            guard update != nil else { return }
            expected = actual
        }
        do {
            try update?(&expected)
        } catch {
            fail("The state assertion closure threw: \(error)", at: location)
            return
        }
        if expected == actual {
            if exhaustivity == .on, update != nil, actual == previous {
                fail(
                    """
                    Expected the state to change after \(verb) \(String(customDumping: event)), but it \
                    did not. Remove the trailing closure if no change is expected.
                    """,
                    at: location
                )
            }
            return
        }
        let difference = diff(expected, actual, format: .proportional).map { "\n\($0.indent(by: 2))" } ?? ""
        let summary =
            update == nil
            ? "The state changed after \(verb) \(String(customDumping: event)), but no change was expected:"
            : "The state after \(verb) \(String(customDumping: event)) does not match the expectation:"
        fail("\(summary) (−: expected, +: actual)\(difference)", at: location)
    }

    func reportEffectFailures(at location: SourceLocation) {
        for failure in failures.drain() {
            fail("\(failure)", at: location)
        }
    }

    func fail(_ message: String, at location: SourceLocation) {
        location.fail(message)
    }

    /// The stamp of the next event reduced: its count, and a time that is the same in every run
    /// (2026-01-01T00:00:00Z plus a second per event), so what a reducer reads of `date` and
    /// draws from `uuid` and random numbers is the same in every run of the test.
    func nextStamp() -> EntryStamp {
        reduced += 1
        return EntryStamp(seq: reduced, epoch: 0, committedAt: 1_767_225_600_000_000 + reduced * 1_000_000)
    }

    /// Fails the test when reducing `event` twice from the same state, with the same draws, gives
    /// two states: the reducer reads something beyond its state, its event and its dependencies
    /// (`Date()`, `UUID()`, `Int.random`, a global), and would give each node of a cluster another
    /// state.
    func checkDeterminism(of event: F.Event, stamp: EntryStamp, at location: SourceLocation) {
        let (first, second) = instance.reduceTwice(event, stamp: stamp)
        guard first != second else { return }
        fail(
            """
            The reducer of \(F.self) is not deterministic: reducing \(String(customDumping: event)) twice from the \
            same state gave two states. It reads something other than its state, its event and its \
            dependencies — Date(), UUID(), a random number, a global — so every node of a cluster would \
            hold another state. Read @Dependency(\\.date), \\.uuid, \\.withRandomNumberGenerator instead.
            First: \(String(customDumping: first))
            Second: \(String(customDumping: second))
            """,
            at: location
        )
    }
}

/// Where an assertion was written, so a failure points at the test's line.
struct SourceLocation: Sendable {
    var fileID: StaticString
    var filePath: StaticString
    var line: UInt
    var column: UInt

    /// Reports a test failure at this location, to Swift Testing or XCTest, whichever runs the test.
    func fail(_ message: String) {
        reportIssue(message, fileID: fileID, filePath: filePath, line: line, column: column)
    }
}

/// Runs `body`, giving up after `timeout` of wall-clock time.
///
/// - Returns: Whether `body` finished in time. When it did not, it keeps running; the caller cancels
///   what it waits on.
func waitWithTimeout(_ timeout: Duration, _ body: @escaping @Sendable () async -> Void) async -> Bool {
    await waitForFirst(until: ContinuousClock.now.advanced(by: timeout), of: [body])
}

/// Runs `bodies` concurrently and returns when the first finishes or `deadline` passes, whichever
/// comes first; the others keep running.
///
/// - Returns: Whether a body finished before the deadline.
func waitForFirst(
    until deadline: ContinuousClock.Instant,
    of bodies: [@Sendable () async -> Void]
) async -> Bool {
    let outcome = Mutex<CheckedContinuation<Bool, Never>?>(nil)
    return await withCheckedContinuation { continuation in
        outcome.withLock { $0 = continuation }
        let resume: @Sendable (Bool) -> Void = { finished in
            outcome.withLock { $0.take() }?.resume(returning: finished)
        }
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            resume(false)
        }
        for body in bodies {
            Task {
                await body()
                resume(true)
                timer.cancel()
            }
        }
    }
}
