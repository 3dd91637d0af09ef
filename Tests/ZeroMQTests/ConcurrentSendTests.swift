import Testing
import ZeroMQ

@Suite("Concurrent senders")
struct ConcurrentSendTests {
    @Test("many tasks sending on one handle: every message arrives once, each task's in order")
    func manySenders() async throws {
        try await withLoop { _, loop in
            let tasks = 8
            let perTask = 2000
            let (pull, endpoint) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let push = try await loop.open(.push, configuration: AsyncSocket.Configuration(sendQueueCapacity: 256)) {
                try $0.connect(endpoint)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for sequence in 0..<perTask {
                            let message: Message = [Frame("\(task)"), Frame("\(sequence)")]
                            if sequence % 3 == 0, try push.trySend(message) { continue }
                            try await push.send(message)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let received = try await receive(tasks * perTask, from: pull, within: .seconds(30))
            var nextByTask = [Int](repeating: 0, count: tasks)
            var seen = Set<[Int]>()
            for message in received {
                let task = Int(message[0].string!)!
                let sequence = Int(message[1].string!)!
                #expect(sequence == nextByTask[task], "task \(task) out of order")
                nextByTask[task] = sequence + 1
                #expect(seen.insert([task, sequence]).inserted, "duplicate \(task)/\(sequence)")
            }
            #expect(seen.count == tasks * perTask)
            #expect(push.statistics.sent == tasks * perTask)
        }
    }

    @Test("batch sends from several tasks are each kept in order")
    func batchSenders() async throws {
        try await withLoop { _, loop in
            let (pull, endpoint) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let push = try await loop.open(.push, configuration: AsyncSocket.Configuration(sendQueueCapacity: 100)) {
                try $0.connect(endpoint)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<4 {
                    group.addTask {
                        let batch = (0..<500).map { Message(strings: ["\(task)", "\($0)"]) }
                        try await push.send(contentsOf: batch)
                    }
                }
                try await group.waitForAll()
            }
            let received = try await receive(2000, from: pull)
            for task in 0..<4 {
                let sequence = received.filter { $0[0].string == "\(task)" }.map { Int($0[1].string!)! }
                #expect(sequence == Array(0..<500))
            }
        }
    }
}
