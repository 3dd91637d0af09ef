/// The handle `FlowStore.emit(_:)` returns: the effects the event started.
///
/// Await ``finish()`` to keep those effects alive for as long as the calling task runs, the
/// lifecycle pattern of SwiftUI's `.task` modifier:
///
/// ```swift
/// await store.emit(.runTasks).finish()   // returns when the effects end; cancelling the caller
///                                        // cancels them
/// ```
///
/// The handle covers the effects of the event, of the events those effects send, and so on.
public struct EmitTask: Sendable {
    let group: EffectGroup?

    package init(group: EffectGroup?) {
        self.group = group
    }

    /// Waits until every effect of the event has ended.
    ///
    /// If the waiting task is cancelled, the effects are cancelled too.
    public func finish() async {
        guard let group else { return }
        await withTaskCancellationHandler {
            await group.waitUntilFinished()
        } onCancel: {
            group.cancel()
        }
    }

    /// Cancels every effect of the event.
    public func cancel() {
        group?.cancel()
    }

    /// Whether ``cancel()`` was called, or the waiting task of ``finish()`` was cancelled.
    public var isCancelled: Bool {
        group?.isCancelled ?? false
    }

    /// Whether every effect of the event has ended (or there were none).
    public var hasFinished: Bool {
        group?.isFinished ?? true
    }
}
