import FlowKitCluster
import Foundation
import Synchronization
import Testing

/// Polls `probe` until it returns a value, or fails after `timeout` saying what it waited for.
///
/// Errors from `probe` count as "not yet" (a node still starting, an instance not created yet); the
/// last one is in the failure message.
func eventually<T>(
    _ what: String,
    timeout: Duration = .seconds(10),
    every interval: Duration = .milliseconds(50),
    _ probe: () async throws -> T?
) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    var lastError: (any Error)?
    while true {
        do {
            if let value = try await probe() { return value }
        } catch {
            lastError = error
        }
        try Task.checkCancellation()
        if ContinuousClock.now >= deadline {
            throw HarnessError("timed out after \(timeout) waiting until \(what)" + (lastError.map { "; last error: \($0)" } ?? ""))
        }
        try await Task.sleep(for: interval)
    }
}

/// Waits until `clients`' nodes run `runningEffects` effects between them, hold no submission to
/// send, and have applied the highest head any of them knows: what was in flight has landed.
///
/// - Returns: That head.
func settled(_ clients: [ClusterClient], runningEffects: Int, timeout: Duration = .seconds(10)) async throws -> UInt64 {
    try await eventually("the nodes settled with \(runningEffects) effect(s) running", timeout: timeout, every: .milliseconds(50)) {
        var statuses: [NodeStatus] = []
        for client in clients { statuses.append(try await client.status()) }
        let head = statuses.map(\.knownHead).max() ?? 0
        let running = statuses.map(\.runningEffects).reduce(0, +)
        return running == runningEffects && statuses.allSatisfy({ $0.pendingSubmissions == 0 && $0.applied >= head }) ? head : nil
    }
}

extension ClusterClient.State {
    /// The state JSON as text.
    var text: String { String(decoding: json, as: UTF8.self) }

    /// The state decoded as `type`.
    func decode<S: Decodable>(_ type: S.Type) throws -> S {
        try JSONDecoder().decode(S.self, from: Data(json))
    }
}

/// Failures recorded by tests of suites with ``Testing/Trait/countingFailures``, so the harness
/// knows to print the processes' logs when an `#expect` failed without throwing.
enum RecordedFailures {
    private static let counter = Mutex(0)
    static var count: Int { counter.withLock { $0 } }
    static func add() { counter.withLock { $0 += 1 } }
}

extension Trait where Self == IssueHandlingTrait {
    /// Counts failing issues in ``RecordedFailures`` (and passes every issue on unchanged).
    static var countingFailures: Self {
        .compactMapIssues { issue in
            if issue.isFailure { RecordedFailures.add() }
            return issue
        }
    }
}
