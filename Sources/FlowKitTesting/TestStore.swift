import ConcurrencyExtras
import CustomDump
import Dependencies
import FlowKitCore
import IssueReporting
import Synchronization

/// A store for tests that asserts, exhaustively, everything a flow does: each state change, each
/// event its effects send back, and that no effect is left running.
///
/// ```swift
/// @Test func timer() async {
///     let clock = TestClock()
///     let store = TestStore(initialState: TimerFlow.State()) {
///         TimerFlow()
///     } withDependencies: {
///         $0.continuousClock = clock
///     }
///     await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = true }
///     await clock.advance(by: .seconds(1))
///     await store.receive(.timerTick) { $0.secondsElapsed = 1 }
///     await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = false }
///     await store.finish()
/// }
/// ```
///
/// A test fails, with a readable diff, when:
/// - a state changes other than the `assert` closure says (or changes when no closure was given);
/// - an effect sends an event the test does not ``receive(_:timeout:assert:fileID:filePath:line:column:)``
///   before its next ``send(_:assert:fileID:filePath:line:column:)`` or ``finish(timeout:fileID:filePath:line:column:)``;
/// - an effect is still running at ``finish(timeout:fileID:filePath:line:column:)``;
/// - an effect throws without a `catch:` handler.
///
/// Events that effects send wait in an inbox, in the order sent, and are applied in that order
/// before the test's next step: ``receive(_:timeout:assert:fileID:filePath:line:column:)`` asserts
/// them one by one, against the state each one produced. Posting to the inbox never suspends the
/// effect, so an effect that sends and then sleeps on a `TestClock` has its sleep registered before
/// the test can advance the clock.
public actor TestStore<F: Flow> where F.State: Equatable {
    /// How strictly the store asserts.
    public enum Exhaustivity: Sendable, Equatable {
        /// Every state change, received event and running effect must be asserted.
        case on
        /// Only what the test asserts is checked: an `assert` closure checks the fields it sets,
        /// unasserted received events are skipped, and effects still running at `finish` are cancelled.
        case off
    }

    /// A state produced by a received event, waiting to be asserted.
    struct Received {
        var event: F.Event
        var state: F.State
    }

    let instance: FlowInstance<F>
    /// How many events the store has reduced: the seq of their ``EntryStamp``s.
    var reduced: UInt64 = 0
    /// Held apart from the instance so that `deinit` can stop the effects.
    let runtime: EffectRuntime<F.Event>
    /// The state as the test last asserted it: what the next assertion's closure starts from.
    var assertedState: F.State
    var received: [Received] = []
    let inbox: Inbox<F.Event>
    let failures: FailureLog

    /// How strictly the store asserts; exhaustive by default. Settable from the test, as in TCA:
    /// `store.exhaustivity = .off`.
    public nonisolated var exhaustivity: Exhaustivity {
        get { exhaustivitySetting.withLock { $0 } }
        set { exhaustivitySetting.withLock { $0 = newValue } }
    }
    private let exhaustivitySetting = Mutex(Exhaustivity.on)
    /// How long ``receive(_:timeout:assert:fileID:filePath:line:column:)`` and
    /// ``finish(timeout:fileID:filePath:line:column:)`` wait before failing. Waiting is on the wall
    /// clock only to bound a test that is going to fail; flows' own time comes from their injected
    /// clock (a `TestClock`).
    public internal(set) var timeout: Duration = .seconds(1)

    /// Creates a test store.
    ///
    /// - Parameters:
    ///   - initialState: The state before the first event.
    ///   - flow: Builds the flow under test, inside the store's dependency scope.
    ///   - prepareDependencies: Overrides dependencies (a `TestClock`, stub clients).
    public init(
        initialState: F.State,
        flow: () -> F,
        withDependencies prepareDependencies: (inout DependencyValues) -> Void = { _ in }
    ) {
        let (flow, dependencies) = withDependencies {
            $0.deriveReducerValuesFromEntries()
            prepareDependencies(&$0)
        } operation: {
            (flow(), DependencyValues._current)
        }
        let failures = FailureLog()
        let inbox = Inbox<F.Event>()
        let runtime = EffectRuntime<F.Event>(
            deliver: { event, group in inbox.post(event, group: group) },
            reportFailure: { failure in failures.append(failure) }
        )
        self.instance = FlowInstance(flow: flow, state: initialState, dependencies: dependencies, runtime: runtime)
        self.runtime = runtime
        self.failures = failures
        self.inbox = inbox
        self.assertedState = initialState
    }

    deinit {
        runtime.shutDown()
    }

    /// The current state.
    public var state: F.State { instance.state }

    /// Sends an event and asserts the state it produces.
    ///
    /// - Parameters:
    ///   - event: The event to send.
    ///   - updateStateToExpectedResult: Changes the previous state into the expected one. Omit it
    ///     when the event must not change the state.
    /// - Returns: A handle on the effects the event started.
    @discardableResult
    public func send(
        _ event: F.Event,
        assert updateStateToExpectedResult: (@Sendable (inout F.State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async -> TestStoreTask {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        applyInbox()
        reportEffectFailures(at: location)
        if !received.isEmpty {
            if exhaustivity == .on {
                fail(
                    """
                    Must handle \(received.count) received event(s) before sending an event:
                    \(received.map { "  • " + String(customDumping: $0.event) }.joined(separator: "\n"))
                    """,
                    at: location
                )
            }
            skipReceivedEvents()
        }
        var first = true
        var stateAfterSend = instance.state
        let stamp = nextStamp()
        checkDeterminism(of: event, stamp: stamp, at: location)
        let group = instance.apply(event, stamp: stamp) { reducedEvent, state in
            if first {
                first = false
                stateAfterSend = state
            } else {
                received.append(Received(event: reducedEvent, state: state))
            }
        }
        assertState(stateAfterSend, after: "sending", event, update: updateStateToExpectedResult, at: location)
        await settleEffects()
        return TestStoreTask(emitTask: EmitTask(group: group))
    }
}

extension TestStore where F.Event: Equatable {
    /// Asserts that an effect sent `event`, and the state it produced.
    ///
    /// Waits up to `timeout` for the event to arrive.
    ///
    /// - Parameters:
    ///   - event: The event expected next.
    ///   - timeout: How long to wait; `nil` uses ``timeout``.
    ///   - updateStateToExpectedResult: Changes the previous state into the expected one.
    public func receive(
        _ event: F.Event,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: (@Sendable (inout F.State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let location = SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
        guard let next = await nextReceived(timeout: timeout ?? self.timeout, matching: { $0 == event }) else {
            fail(
                """
                Expected to receive an event, but received none within \(timeout ?? self.timeout).
                  Expected: \(String(customDumping: event))
                """,
                at: location
            )
            return
        }
        if next.event != event {
            let difference = diff(event, next.event, format: .proportional).map { "\n\($0.indent(by: 2))" } ?? ""
            fail("Received an unexpected event: (−: expected, +: received)\(difference)", at: location)
            // The event is wrong; its state would only repeat the failure.
            assertedState = next.state
            return
        }
        assertState(next.state, after: "receiving", next.event, update: updateStateToExpectedResult, at: location)
        reportEffectFailures(at: location)
    }
}

extension TestStore where F.Event: CasePathable {
    /// Asserts that an effect sent an event of the case `casePath` names, whatever its value, and
    /// the state it produced: `await store.receive(\.numberFactResponse.success)`, as in TCA. The
    /// event type need not be `Equatable`; mark it `@CasePathable`.
    ///
    /// - Parameters:
    ///   - casePath: The case (or a nested case) expected next.
    ///   - timeout: How long to wait; `nil` uses ``timeout``.
    ///   - updateStateToExpectedResult: Changes the previous state into the expected one.
    public func receive<Value>(
        _ casePath: CaseKeyPath<F.Event, Value>,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: (@Sendable (inout F.State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(casePath, timeout: timeout, matching: { _ in true }, description: "\(casePath)", assert: updateStateToExpectedResult,
            at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Asserts that an effect sent an event of the case `casePath` names carrying `value`, and the
    /// state it produced: `await store.receive(\.numberFactResponse.success, "42 is a number")`.
    public func receive<Value: Equatable>(
        _ casePath: CaseKeyPath<F.Event, Value>,
        _ value: Value,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: (@Sendable (inout F.State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(casePath, timeout: timeout, matching: { $0 == value }, description: "\(casePath) with \(String(customDumping: value))",
            assert: updateStateToExpectedResult, at: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    private func receive<Value>(
        _ casePath: CaseKeyPath<F.Event, Value>,
        timeout: Duration?,
        matching matches: (Value) -> Bool,
        description: String,
        assert updateStateToExpectedResult: (@Sendable (inout F.State) throws -> Void)?,
        at location: SourceLocation
    ) async {
        func accepts(_ event: F.Event) -> Bool { event[case: casePath].map(matches) ?? false }
        guard let next = await nextReceived(timeout: timeout ?? self.timeout, matching: { accepts($0) }) else {
            fail("Expected to receive an event matching \(description), but received none within \(timeout ?? self.timeout).", at: location)
            return
        }
        guard accepts(next.event) else {
            fail(
                """
                Received an unexpected event:
                  Expected: an event matching \(description)
                  Received: \(String(customDumping: next.event))
                """,
                at: location
            )
            assertedState = next.state
            return
        }
        assertState(next.state, after: "receiving", next.event, update: updateStateToExpectedResult, at: location)
        reportEffectFailures(at: location)
    }
}
