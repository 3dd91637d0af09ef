import Synchronization

/// Runtime-held state that some effects consult when they start, such as throttle windows.
///
/// One context belongs to one running flow instance, so two stores never share a throttle window.
public final class EffectContext: Sendable {
    private let slots = Mutex<[CancelID: any Sendable]>([:])

    package init() {}

    /// Reads and updates the value stored for `id`, atomically.
    package func withSlot<Value: Sendable, Result>(
        _ id: CancelID,
        as type: Value.Type,
        _ body: (inout Value?) -> Result
    ) -> Result {
        slots.withLock { slots in
            var value = slots[id] as? Value
            let result = body(&value)
            slots[id] = value
            return result
        }
    }
}
