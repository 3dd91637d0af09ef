/// A type-erased, sendable cancellation identifier.
///
/// Any `Hashable & Sendable` value can name an effect: an enum case, a string, a UUID. Values of
/// different types never collide, because `AnyHashable` compares types as well as values.
public struct CancelID: Hashable, Sendable, CustomStringConvertible {
    // `AnyHashable` is not `Sendable`; every initialiser takes a `Sendable` value, so sharing is safe.
    private nonisolated(unsafe) let base: AnyHashable

    /// Wraps a user's identifier.
    public init<ID: Hashable & Sendable>(_ id: ID) {
        // A type comparison rather than `as?`: this runs for every cancellable effect, and a dynamic
        // cast to a struct costs far more than comparing two metatypes.
        if ID.self == CancelID.self {
            self = unsafeBitCast(id, to: CancelID.self)
        } else {
            self.base = AnyHashable(id)
        }
    }

    /// The wrapped identifier.
    public var value: any Hashable & Sendable {
        // Only `Sendable` values are stored; the cast restores that knowledge.
        base.base as! any Hashable & Sendable
    }

    public var description: String { "\(base.base)" }
}
