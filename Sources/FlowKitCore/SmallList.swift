/// An ordered list that holds up to one element without allocating.
///
/// The effect path's lists almost always hold one element: the cancel ids of an effect, the ids a
/// `.cancel(id:)` names, the tasks one cancel stops. An `Array` allocates storage for each of them,
/// on a path that runs for every effect start and cancel.
@usableFromInline
package struct SmallList<Element> {
    @usableFromInline
    enum Storage {
        case empty
        case one(Element)
        case many([Element])
    }

    @usableFromInline var storage: Storage

    @inlinable
    package init() {
        storage = .empty
    }

    @inlinable
    package init(_ element: Element) {
        storage = .one(element)
    }

    package init(contentsOf elements: some Sequence<Element>) {
        self.init()
        for element in elements { append(element) }
    }

    package var isEmpty: Bool {
        switch storage {
        case .empty: true
        case .one: false
        case .many(let elements): elements.isEmpty
        }
    }

    package mutating func append(_ element: Element) {
        switch storage {
        case .empty:
            storage = .one(element)
        case .one(let first):
            storage = .many([first, element])
        case .many(var elements):
            storage = .empty  // keeps `elements` uniquely referenced while it grows
            elements.append(element)
            storage = .many(elements)
        }
    }

    /// This list with `element` added at the end.
    package func appending(_ element: Element) -> Self {
        var copy = self
        copy.append(element)
        return copy
    }
}

extension SmallList: Sendable where Element: Sendable {}
extension SmallList.Storage: Sendable where Element: Sendable {}

extension SmallList: Sequence {
    @usableFromInline
    package struct Iterator: IteratorProtocol {
        private var list: SmallList
        private var index = 0

        fileprivate init(_ list: SmallList) {
            self.list = list
        }

        @usableFromInline
        package mutating func next() -> Element? {
            defer { index += 1 }
            switch list.storage {
            case .empty:
                return nil
            case .one(let element):
                return index == 0 ? element : nil
            case .many(let elements):
                return index < elements.count ? elements[index] : nil
            }
        }
    }

    @usableFromInline
    package func makeIterator() -> Iterator {
        Iterator(self)
    }

    @usableFromInline
    package var underestimatedCount: Int {
        switch storage {
        case .empty: 0
        case .one: 1
        case .many(let elements): elements.count
        }
    }
}

extension SmallList: ExpressibleByArrayLiteral {
    @usableFromInline
    package init(arrayLiteral elements: Element...) {
        self.init(contentsOf: elements)
    }
}
