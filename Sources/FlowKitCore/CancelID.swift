/// A type-erased, sendable cancellation identifier.
///
/// Any `Hashable & Sendable` value can name an effect: an enum case, a string, a UUID. Values of
/// different types never collide: equality compares types as well as values.
public struct CancelID: Hashable, Sendable, CustomStringConvertible {
    /// The wrapped identifier.
    public let value: any Hashable & Sendable
    /// Computed once: every effect start and cancel looks its ids up in a dictionary, and hashing
    /// through an existential (as `AnyHashable` does) each time cost more than the look-up.
    @usableFromInline let hash: Int

    /// Wraps a user's identifier.
    @inlinable
    public init<ID: Hashable & Sendable>(_ id: ID) {
        // A type comparison rather than `as?`: a dynamic cast costs far more than comparing two
        // metatypes, and this runs for every cancellable effect.
        if ID.self == CancelID.self {
            self = unsafeBitCast(id, to: CancelID.self)
            return
        }
        var hasher = Hasher()
        hasher.combine(ObjectIdentifier(ID.self))
        hasher.combine(id)
        value = id
        hash = hasher.finalize()
    }

    public static func == (lhs: CancelID, rhs: CancelID) -> Bool {
        lhs.hash == rhs.hash && lhs.value.isEqual(to: rhs.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    public var description: String { "\(value)" }

    /// The id's type, named alike in every process that runs the same code: module-qualified
    /// (`MyApp.TimerFlow.CancelID`, `Swift.String`). Swift names a private or local type's context
    /// by an address that differs from process to process; that part reads `(private)` here, so
    /// two private types of the same name in one module have the same name.
    public var typeName: String {
        var name = String(reflecting: type(of: value))
        while let start = name.firstRange(of: "(unknown context at $"), let end = name[start.upperBound...].firstIndex(of: ")") {
            name.replaceSubrange(start.lowerBound...end, with: "(private)")
        }
        return name
    }
}

extension Hashable {
    /// Whether `other` is a value of this type equal to this one, without a dynamic cast: the
    /// existential is opened, and its type compared with this one's.
    fileprivate func isEqual(to other: any Hashable) -> Bool {
        func compare<Other: Hashable>(_ other: Other) -> Bool {
            guard Other.self == Self.self else { return false }
            return self == unsafeBitCast(other, to: Self.self)
        }
        return compare(other)
    }
}
