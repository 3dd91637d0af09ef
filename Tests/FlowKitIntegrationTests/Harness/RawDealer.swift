@_spi(Wire) import FlowKitCluster
import Logging
import ZeroMQ

/// A bare DEALER socket connected to a node's client endpoint, for sending frames that
/// ``ClusterClient`` never would: wrong frame counts, garbage, oversize messages.
final class RawDealer: Sendable {
    private let context: ZMQContext
    private let loop: IOLoop
    private let socket: AsyncSocket

    init(endpoint: String, logger: Logger) async throws {
        context = try ZMQContext()
        loop = try IOLoop(context: context, name: "raw-dealer", logger: logger)
        socket = try await loop.open(.dealer) { socket in
            // Larger than any node accepts, so only the node's limit is tested.
            try socket.setOption(.maxMessageSize, -1)
            try socket.setOption(.linger, .zero)
            try socket.connect(endpoint)
        }
    }

    func send(_ frames: [[UInt8]]) async throws {
        try await socket.send(Message(parts: frames))
    }

    /// Queues many messages at once, in order: pipelined requests.
    func send(batch: [[[UInt8]]]) async throws {
        try await socket.send(contentsOf: batch.map { Message(parts: $0) })
    }

    /// The messages that have arrived (at least one; waits for it).
    func receiveBatch() async throws -> [[[UInt8]]] {
        try await socket.receiveBatch().map { $0.frames.map(\.bytes) }
    }

    /// The next message's frames, or `nil` if none arrives within `timeout`.
    func receive(timeout: Duration) async throws -> [[UInt8]]? {
        let socket = self.socket
        return try await withThrowingTaskGroup(of: [[UInt8]]?.self) { group in
            group.addTask { try await socket.receive().frames.map(\.bytes) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Sends `frames` and decodes the node's `ERROR` answer.
    ///
    /// - Throws: ``HarnessError`` if no answer comes, or the answer is not an `ERROR`.
    func expectError(for frames: [[UInt8]], timeout: Duration = .seconds(5)) async throws -> ErrorReply {
        try await send(frames)
        guard let reply = try await receive(timeout: timeout) else {
            throw HarnessError("no answer within \(timeout) to a message of \(frames.count) frame(s), \(frames.map(\.count)) bytes")
        }
        do {
            return try ErrorReply(frames: reply)
        } catch {
            throw HarnessError("the answer is not an ERROR (\(error)): \(reply.map { $0.prefix(32).map { String($0, radix: 16) } })")
        }
    }

    func close() async {
        await socket.close(linger: .zero)
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}

/// Client-socket message bodies built by hand, byte for byte as docs/PROTOCOL.md lays them out.
enum Wire {
    /// `F K version type`.
    static func header(type: UInt8, version: UInt8 = WireHeader.version) -> [UInt8] { [0x46, 0x4B, version, type] }

    static func u64(_ value: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) } }

    static func shortString(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    /// The first frame of an `EMIT` (type 0x30): `[header request:u64 wait:u8 codec:u8 address]`.
    static func emitHeader(request: UInt64, address: String, wait: UInt8 = 0, codec: UInt8 = 1) -> [UInt8] {
        header(type: 0x30) + u64(request) + [wait, codec] + shortString(address)
    }

    /// `STATUS` (type 0x36).
    static func status(request: UInt64) -> [UInt8] { header(type: 0x36) + u64(request) }
}
