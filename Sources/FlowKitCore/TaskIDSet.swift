/// A set of effect task ids that holds one id without allocating.
///
/// Most cancel ids and most emitted events have one effect task at a time; a `Set` would allocate
/// storage for each of them, on the path every effect start takes.
struct TaskIDSet: Sendable, Sequence {
    private enum Storage: Sendable {
        case empty
        case one(UInt64)
        case many(Set<UInt64>)
    }

    private var storage = Storage.empty

    init() {}

    var isEmpty: Bool {
        switch storage {
        case .empty: true
        case .one: false
        case .many(let ids): ids.isEmpty
        }
    }

    mutating func insert(_ id: UInt64) {
        switch storage {
        case .empty:
            storage = .one(id)
        case .one(let existing):
            if existing != id { storage = .many([existing, id]) }
        case .many(var ids):
            storage = .empty  // keeps `ids` uniquely referenced while it grows
            ids.insert(id)
            storage = .many(ids)
        }
    }

    mutating func remove(_ id: UInt64) {
        switch storage {
        case .empty:
            return
        case .one(let existing):
            if existing == id { storage = .empty }
        case .many(var ids):
            storage = .empty
            ids.remove(id)
            storage = ids.isEmpty ? .empty : .many(ids)
        }
    }

    func makeIterator() -> Iterator {
        switch storage {
        case .empty: Iterator(state: .one(nil))
        case .one(let id): Iterator(state: .one(id))
        case .many(let ids): Iterator(state: .many(ids.makeIterator()))
        }
    }

    struct Iterator: IteratorProtocol {
        fileprivate enum State {
            case one(UInt64?)
            case many(Set<UInt64>.Iterator)
        }

        fileprivate var state: State

        mutating func next() -> UInt64? {
            switch state {
            case .one(let id):
                state = .one(nil)
                return id
            case .many(var iterator):
                let id = iterator.next()
                state = .many(iterator)
                return id
            }
        }
    }
}
