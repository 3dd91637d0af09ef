import Testing
@testable import ZeroMQ

@Suite("Inbound batch queue")
struct BatchQueueTests {
    static func batch(_ range: Range<Int>) -> [Message] { range.map { Message("\($0)") } }

    @Test("batches come out in order, split at max and merged when small")
    func order() {
        var queue = BatchQueue()
        queue.append(Self.batch(0..<3))
        queue.append([])
        queue.append(Self.batch(3..<5))
        queue.append(Self.batch(5..<200))
        #expect(queue.count == 200)
        // Small batches merge (3 + 2), but not with the big one past the limit of max.
        #expect(queue.take(max: 100) == Self.batch(0..<5))
        #expect(queue.take(max: 50) == Self.batch(5..<55))
        #expect(queue.count == 145)
        #expect(queue.take(max: .max) == Self.batch(55..<200))
        #expect(queue.isEmpty)
        #expect(queue.take(max: 10).isEmpty)
    }

    @Test("many small batches stay in order across compaction")
    func compaction() {
        var queue = BatchQueue()
        var expected = 0
        for round in 0..<50 {
            for index in 0..<100 { queue.append([Message("\(round * 100 + index)")]) }
            for message in queue.take(max: 70) + queue.take(max: 10) {
                #expect(message == Message("\(expected)"))
                expected += 1
            }
        }
        while !queue.isEmpty {
            for message in queue.take(max: 1000) {
                #expect(message == Message("\(expected)"))
                expected += 1
            }
        }
        #expect(expected == 5000)
    }
}
