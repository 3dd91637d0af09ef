import FlowKitCore

/// The effects started by one ``TestStore/send(_:assert:fileID:filePath:line:column:)``, to cancel or
/// wait on in a test.
///
/// ```swift
/// let task = await store.send(.runTasks)
/// await store.receive(.statusChanged(.online)) { $0.status = .online }
/// await task.cancel()   // the view disappeared
/// ```
public struct TestStoreTask: Sendable {
    let emitTask: EmitTask

    /// Cancels the event's effects and waits until they have ended.
    public func cancel() async {
        emitTask.cancel()
        await emitTask.finish()
    }

    /// Waits until the event's effects have ended; fails the test if they run longer than `timeout`.
    public func finish(
        timeout: Duration = .seconds(1),
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let emitTask = self.emitTask
        let finished = await waitWithTimeout(timeout) { await emitTask.finish() }
        guard !finished else { return }
        SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column)
            .fail("The event's effects were still running after \(timeout).")
        emitTask.cancel()
    }

    /// Whether every effect of the event has ended.
    public var isFinished: Bool { emitTask.hasFinished }
}
