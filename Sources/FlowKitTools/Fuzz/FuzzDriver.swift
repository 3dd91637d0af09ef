@_spi(Wire) import FlowKitCluster
import FlowKitCommands
import Foundation
import ZeroMQ

/// Sends one target its fuzz messages from a thread of its own (plain blocking ZeroMQ sockets),
/// and counts what came back.
struct FuzzDriver: Sendable {
    /// What one target was sent and answered.
    struct Tally: Sendable, Codable {
        var sent = 0
        var byStrategy: [String: Int] = [:]
        /// ERROR replies by reason label (`bad_magic`, …).
        var errorReplies: [String: Int] = [:]
        /// Other answers by message type (`emitted`, `ack`, `range`, `progress`, …).
        var otherReplies: [String: Int] = [:]
        /// Answers that are not FlowKit messages at all: the receiver must never send one.
        var unreadableReplies = 0
        /// REQ requests not answered within the wait (their socket moved on).
        var unanswered = 0
        /// Published messages an XSUB peer received for what it subscribed to.
        var published = 0
        var seconds: Double = 0
        var error: String?

        var totalErrorReplies: Int { errorReplies.values.reduce(0, +) }
    }

    let target: FuzzTarget
    let endpoint: String
    let count: Int
    let seed: UInt64
    let head: UInt64

    func run() async -> Tally {
        await onDedicatedThread(named: "fuzz-\(target.rawValue)") { self.runBlocking() }
    }

    private func runBlocking() -> Tally {
        var tally = Tally()
        let started = ContinuousClock.now
        var random = SeededRandom(seed: seed).derived(target.rawValue)
        let mutator = FuzzMutator(templates: FuzzTemplates.templates(for: target, head: head))
        do {
            let context = try ZMQContext()
            defer { context.shutdown() }
            switch target {
            case .nodeReq:
                try runRequests(context: context, mutator: mutator, random: &random, tally: &tally)
            default:
                try runPipelined(context: context, mutator: mutator, random: &random, tally: &tally)
            }
        } catch {
            tally.error = "\(error)"
        }
        tally.seconds = (ContinuousClock.now - started).inSeconds
        return tally
    }

    private func socket(_ context: ZMQContext, _ type: SocketType) throws -> Socket {
        let socket = try Socket(context: context, type: type)
        try socket.setOption(.maxMessageSize, Int64(-1))
        try socket.setOption(.linger, Duration.zero)
        try socket.setOption(.receiveHighWaterMark, Int32(200_000))
        try socket.setOption(.sendHighWaterMark, Int32(10_000))
        return socket
    }

    /// DEALER (or XSUB): bursts of messages, then the answers to them.
    private func runPipelined(context: ZMQContext, mutator: FuzzMutator, random: inout SeededRandom, tally: inout Tally) throws {
        let socket = try socket(context, target.socketType)
        defer { socket.close(linger: .zero) }
        try socket.connect(endpoint)
        Thread.sleep(forTimeInterval: 0.2)
        if target == .coordinatorSubmit {
            // Said first, so that SUBMITs as node 900 reach the admission rule (a mutated HELLO
            // may later take the connection to another node; the templates' HELLO brings it back).
            try socket.send(Message(parts: FuzzTemplates.hello.frames))
        }
        var remaining = count
        while remaining > 0 {
            let burst = min(256, remaining)
            for _ in 0..<burst {
                let (strategy, frames) = mutator.next(&random)
                try socket.send(Message(parts: frames))
                tally.sent += 1
                tally.byStrategy[strategy.rawValue, default: 0] += 1
            }
            remaining -= burst
            if target.answers {
                try drain(socket, idle: .milliseconds(30), atLeast: burst, limit: .seconds(5), tally: &tally)
            } else {
                while let message = try socket.receive(dontWait: true) { classify(message, tally: &tally) }
            }
        }
        // Late answers: queries waiting for a seq, emits waiting for the order.
        try drain(socket, idle: .seconds(1), atLeast: .max, limit: .seconds(target.answers ? 15 : 2), tally: &tally)
    }

    /// Receives until `atLeast` messages came, or nothing but pushes (PROGRESS, for a mutated
    /// WATCH that may run for an hour) came for `idle`, or `limit` passed.
    private func drain(_ socket: Socket, idle: Duration, atLeast: Int, limit: Duration, tally: inout Tally) throws {
        try socket.setOption(.receiveTimeout, min(idle, .milliseconds(50)))
        let deadline = ContinuousClock.now + limit
        var lastAnswer = ContinuousClock.now
        var received = 0
        while received < atLeast, ContinuousClock.now < deadline, ContinuousClock.now - lastAnswer < idle {
            guard let message = try socket.receive() else { continue }
            received += 1
            if !classify(message, tally: &tally) { lastAnswer = .now }
        }
    }

    /// REQ: sixteen sockets, each with one request out; an unanswered one is abandoned after a
    /// while (`ZMQ_REQ_RELAXED`). libzmq's REQ drops whatever is queued when it sends the next
    /// request, so a late answer is lost, never miscounted.
    private func runRequests(context: ZMQContext, mutator: FuzzMutator, random: inout SeededRandom, tally: inout Tally) throws {
        let relaxed = SocketOption<Bool>(rawValue: 53, name: "ZMQ_REQ_RELAXED")
        var sockets: [(socket: Socket, waitingSince: ContinuousClock.Instant?)] = []
        for _ in 0..<16 {
            let socket = try socket(context, .req)
            try socket.setOption(relaxed, true)
            try socket.connect(endpoint)
            sockets.append((socket, nil))
        }
        defer { for entry in sockets { entry.socket.close(linger: .zero) } }
        Thread.sleep(forTimeInterval: 0.2)
        var remaining = count
        let patience: Duration = .milliseconds(250)
        let deadline = ContinuousClock.now + .seconds(Double(count) / 200 + 60)
        while (remaining > 0 || sockets.contains { $0.waitingSince != nil }), ContinuousClock.now < deadline {
            var progressed = false
            for index in sockets.indices {
                if let since = sockets[index].waitingSince {
                    if let message = try sockets[index].socket.receive(dontWait: true) {
                        classify(message, tally: &tally)
                        sockets[index].waitingSince = nil
                        progressed = true
                    } else if ContinuousClock.now - since > patience {
                        tally.unanswered += 1
                        sockets[index].waitingSince = nil
                    }
                }
                if sockets[index].waitingSince == nil, remaining > 0 {
                    let (strategy, frames) = mutator.next(&random)
                    try sockets[index].socket.send(Message(parts: frames))
                    tally.sent += 1
                    tally.byStrategy[strategy.rawValue, default: 0] += 1
                    remaining -= 1
                    sockets[index].waitingSince = .now
                    progressed = true
                }
            }
            if !progressed { usleep(100) }
        }
    }

    /// Counts an incoming message.
    ///
    /// - Returns: Whether it was a push (PROGRESS) rather than an answer.
    @discardableResult
    private func classify(_ message: Message, tally: inout Tally) -> Bool {
        if target == .coordinatorPublish {
            tally.published += 1
            return false
        }
        // A REQ-style envelope (empty delimiter) comes back to a DEALER as a leading empty frame.
        let frames = Array(message.parts.drop { $0.isEmpty })
        guard let first = frames.first, first.count >= 4, first[0] == 0x46, first[1] == 0x4B, WireHeader.spoken.contains(first[2]),
            let type = MessageType(rawValue: first[3])
        else {
            tally.unreadableReplies += 1
            return false
        }
        if type == .error {
            guard let reply = try? ErrorReply(frames: frames) else {
                tally.unreadableReplies += 1
                return false
            }
            tally.errorReplies[reply.error.code.metricLabel, default: 0] += 1
        } else {
            tally.otherReplies["\(type)", default: 0] += 1
        }
        return type == .progress
    }
}

extension Message {
    /// The frames' bytes.
    fileprivate var parts: [[UInt8]] { frames.map(\.bytes) }
}
