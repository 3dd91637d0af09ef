@_spi(Wire) import FlowKitCluster
import Logging
import ZeroMQ

/// Reads the coordinator's log through its sync socket (RANGE_REQUEST), as a node repairing a gap
/// does: how the end checks see exactly what was ordered.
final class LogReader: Sendable {
    private let context: ZMQContext
    private let loop: IOLoop
    private let socket: AsyncSocket
    private let timeout: Duration = .seconds(15)

    init(syncEndpoint: String, logger: Logger) async throws {
        context = try ZMQContext()
        loop = try IOLoop(context: context, name: "log-reader", logger: logger)
        socket = try await loop.open(.dealer) { socket in
            try socket.setOption(.maxMessageSize, Int64(-1))
            try socket.setOption(.linger, Duration.zero)
            try socket.connect(syncEndpoint)
        }
    }

    /// Asks for `from…to` (at most `max`); `nil` for an ERROR `notFound` (compacted away).
    private func range(request: UInt64, from: UInt64, to: UInt64, max: UInt32) async throws -> RangeMessage? {
        try await socket.send(Message(parts: RangeRequest(request: request, from: from, to: to, maxCount: max).frames))
        while true {
            let reply = try await receive()
            if let range = try? RangeMessage(frames: reply), range.request == request { return range }
            if let error = try? ErrorReply(frames: reply), error.request == request {
                if error.error.code == .notFound { return nil }
                throw error.error
            }
        }
    }

    private func receive() async throws -> [[UInt8]] {
        let socket = self.socket
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: [[UInt8]]?.self) { group in
            group.addTask { try await socket.receive().frames.map(\.bytes) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let reply = try await group.next() ?? nil else {
                throw ChaosError("the coordinator's sync socket did not answer within \(timeout)")
            }
            return reply
        }
    }

    private var nextRequest: UInt64 { UInt64.random(in: 1...UInt64.max) }

    /// The oldest seq the log still holds (1 unless it was compacted), by bisection.
    func firstAvailableSeq(head: UInt64) async throws -> UInt64 {
        guard head > 0, try await range(request: nextRequest, from: 1, to: 1, max: 1) == nil else { return 1 }
        var low: UInt64 = 1
        var high = head
        while low + 1 < high {
            let middle = low + (high - low) / 2
            if try await range(request: nextRequest, from: middle, to: middle, max: 1) == nil { low = middle } else { high = middle }
        }
        return high
    }

    /// Calls `body` with every entry from `from` through `last`, in order.
    func read(from: UInt64, through last: UInt64, _ body: (Entry) throws -> Void) async throws {
        var next = from
        while next <= last {
            guard let range = try await range(request: nextRequest, from: next, to: last, max: 10_000) else {
                throw ChaosError("the log no longer holds seq \(next)")
            }
            guard let tail = range.entries.last else { throw ChaosError("RANGE \(next)…\(last) came back empty (head \(range.head))") }
            for entry in range.entries { try body(entry) }
            next = tail.seq + 1
        }
    }

    func close() async {
        await socket.close(linger: .zero)
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}
