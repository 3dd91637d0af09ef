import Foundation
import Logging
import Synchronization
import Testing
import ZeroMQ

/// A logger that drops everything unless `ZMQ_TEST_LOG` is set (then prints to stderr).
let testLogger: Logger = {
    if ProcessInfo.processInfo.environment["ZMQ_TEST_LOG"] != nil {
        var logger = Logger(label: "zmq-tests", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .trace
        return logger
    }
    return Logger(label: "zmq-tests", factory: { _ in SwiftLogNoOpLogHandler() })
}()

/// An endpoint that lets the OS choose a free loopback port.
let anyLoopbackPort = "tcp://127.0.0.1:*"

struct TimeoutError: Error, CustomStringConvertible {
    let what: String
    let after: Duration
    var description: String { "timed out after \(after) waiting for \(what)" }
}

/// Runs `body`, failing with ``TimeoutError`` if it takes longer than `limit`.
///
/// The work runs in an unstructured task that is cancelled, not awaited, on timeout: a
/// task group would wait for its child and hang the test on a non-cancellable await.
/// (The sleep only bounds the wait; it never orders events.)
func withTimeout<T: Sendable>(
    _ limit: Duration = .seconds(10),
    _ what: String = "the operation",
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = TimeoutRace<T>()
    let work = Task { race.finish(with: await Result(catching: body)) }
    let timer = Task {
        try await Task.sleep(for: limit)
        race.finish(with: .failure(TimeoutError(what: what, after: limit)))
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await race.value()
}

/// The first of several results, handed to one waiter.
final class TimeoutRace<T: Sendable>: Sendable {
    private let state = Mutex<(result: Result<T, any Error>?, waiter: CheckedContinuation<T, any Error>?)>((nil, nil))

    func finish(with result: Result<T, any Error>) {
        let waiter: CheckedContinuation<T, any Error>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<T, any Error>? = state.withLock { state in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// A context with one I/O loop, torn down (context terminated) after `body`.
func withLoop<T: Sendable>(
    ioThreads: Int32 = 1,
    _ body: (ZMQContext, IOLoop) async throws -> T
) async throws -> T {
    let context = try ZMQContext(ioThreads: ioThreads)
    let loop = try IOLoop(context: context, name: "zmq-test", logger: testLogger)
    do {
        let result = try await body(context, loop)
        try await withTimeout(.seconds(10), "context termination") { await context.terminate() }
        return result
    } catch {
        try? await withTimeout(.seconds(10), "context termination") { await context.terminate() }
        throw error
    }
}

/// A unique directory for `ipc://` endpoints, so parallel runs never clash.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("zmq-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Receives messages until `count` have arrived (or the timeout fails the test).
func receive(_ count: Int, from socket: AsyncSocket, within limit: Duration = .seconds(10)) async throws -> [Message] {
    try await withTimeout(limit, "\(count) messages") {
        var messages: [Message] = []
        while messages.count < count {
            messages += try await socket.receiveBatch(max: count - messages.count)
        }
        return messages
    }
}

/// Deterministic test bytes: byte `i` is `(i * 31 + seed) & 0xFF`.
func pattern(count: Int, seed: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    for index in 0..<count { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ seed) }
    return bytes
}

/// Waits for the first monitor event matching `predicate`; `nil` if monitoring ended first.
func firstEvent(
    in monitor: SocketMonitor,
    within limit: Duration = .seconds(10),
    where predicate: @escaping @Sendable (MonitorEvent) -> Bool
) async throws -> MonitorEvent? {
    try await withTimeout(limit, "a monitor event") { () async -> MonitorEvent? in
        for await event in monitor where predicate(event) { return event }
        return nil
    }
}
