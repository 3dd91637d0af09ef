extension Effect {
    /// Whether the runtime can carry out the whole effect without starting a task.
    var isSynchronous: Bool {
        switch operation {
        case .none, .send, .cancel:
            return true
        case .run, .deferred:
            return false
        case .cancellable(let inner, _, _):
            return inner.isSynchronous
        case .merge(let effects), .concatenate(let effects):
            return effects.allSatisfy(\.isSynchronous)
        }
    }
}
