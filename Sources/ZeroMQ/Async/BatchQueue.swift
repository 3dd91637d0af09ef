/// A FIFO of received batches, counted in messages.
///
/// The I/O thread appends each batch it reads as one array, so handing it over costs one
/// retain instead of a retain and release per message (flattening into one array did
/// show up in profiles). Consumers take whole batches; small ones are merged so a slow
/// consumer still gets big batches.
struct BatchQueue {
    private var batches: [[Message]] = []
    private var head = 0
    /// The number of messages queued.
    private(set) var count = 0

    /// Batches smaller than this are merged with the ones after them when taken.
    static let mergeBelow = 64
    /// Merged batches stop growing at this size.
    static let mergeLimit = 1024

    var isEmpty: Bool { count == 0 }

    /// Appends a non-empty batch.
    mutating func append(_ batch: [Message]) {
        guard !batch.isEmpty else { return }
        batches.append(batch)
        count += batch.count
    }

    /// Removes and returns up to `max` messages from the front, in order.
    mutating func take(max: Int) -> [Message] {
        guard head < batches.count, max > 0 else { return [] }
        let first = batches[head]
        if first.count > max {
            batches[head] = Array(first[max...])
            count -= max
            return Array(first[..<max])
        }
        popFront()
        var result = first
        if result.count < BatchQueue.mergeBelow {
            let limit = Swift.min(max, BatchQueue.mergeLimit)
            while head < batches.count, result.count + batches[head].count <= limit {
                result.append(contentsOf: batches[head])
                popFront()
            }
        }
        return result
    }

    private mutating func popFront() {
        count -= batches[head].count
        batches[head] = []
        head += 1
        if head == batches.count {
            batches.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= batches.count {
            batches.removeFirst(head)
            head = 0
        }
    }
}
