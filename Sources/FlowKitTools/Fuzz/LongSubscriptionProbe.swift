import FlowKitProcesses
import Foundation
import ZeroMQ

/// What long subscriptions cost the coordinator: a child process subscribes to a few distinct
/// topics of megabytes each on the publish socket (a SUB's subscription is one frame, up to the
/// socket's maximum message size) and leaves; the coordinator's RSS is read before and after.
///
/// The child is `flowkit fuzz --subscribe-child …`, which exits without closing its socket:
/// libzmq frees an XSUB's subscription trie recursively, and a megabyte-deep trie overflows the
/// stack of the process that holds it.
struct LongSubscriptionProbe: Sendable {
    struct Result: Sendable, Codable {
        var topics: Int
        var bytesPerTopic: Int
        var rssBefore: Int
        /// While the subscriber is connected.
        var rssConnected: Int
        /// After it left.
        var rssAfter: Int
        var coordinatorAlive: Bool

        var growth: Int { max(rssConnected, rssAfter) - rssBefore }
    }

    let publishEndpoint: String
    let coordinatorPid: Int32
    let topics: Int
    let bytesPerTopic: Int
    /// Where the subscribing child's output goes.
    let directory: String

    func run() async throws -> Result {
        let before = ProcessMemory.residentBytes(coordinatorPid) ?? 0
        let child = try ChildProcess.spawn(
            arguments: ["fuzz", "--subscribe-child", publishEndpoint, "--subscribe-topics", "\(topics)", "--subscribe-bytes", "\(bytesPerTopic)"],
            name: "long-subscriber",
            directory: directory,
            whenParentDies: .stopsGracefully
        )
        var connected = before
        while child.isRunning {
            connected = max(connected, ProcessMemory.residentBytes(coordinatorPid) ?? 0)
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(2))
        let after = ProcessMemory.residentBytes(coordinatorPid)
        return Result(
            topics: topics, bytesPerTopic: bytesPerTopic, rssBefore: before, rssConnected: connected,
            rssAfter: after ?? 0, coordinatorAlive: after != nil && kill(coordinatorPid, 0) == 0
        )
    }

    /// The child's side: subscribe, hold the subscriptions a while, leave without closing.
    static func child(endpoint: String, topics: Int, bytes: Int) -> Never {
        do {
            let context = try ZMQContext()
            let socket = try Socket(context: context, type: .xsub)
            try socket.setOption(.maxMessageSize, Int64(-1))
            try socket.connect(endpoint)
            Thread.sleep(forTimeInterval: 0.3)
            for topic in 0..<topics {
                let prefix = Array("long-\(topic)-".utf8)
                try socket.send(Message(parts: [[1] + prefix + [UInt8](repeating: UInt8(ascii: "a"), count: max(bytes - prefix.count, 0))]))
            }
            Thread.sleep(forTimeInterval: 3)
        } catch {
            FileHandle.standardError.write(Data("subscribe child: \(error)\n".utf8))
            _exit(1)
        }
        _exit(0)
    }
}
