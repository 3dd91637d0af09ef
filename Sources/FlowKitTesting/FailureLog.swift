import FlowKitCore
import Synchronization

/// Errors thrown by effects without a `catch:` handler, collected until the test next asserts.
final class FailureLog: Sendable {
    private let failures = Mutex<[EffectFailure]>([])

    func append(_ failure: EffectFailure) {
        failures.withLock { $0.append(failure) }
    }

    func drain() -> [EffectFailure] {
        failures.withLock { failures in
            defer { failures = [] }
            return failures
        }
    }
}

extension String {
    /// Each line of the string, indented by `count` spaces: how failure messages nest a diff.
    func indent(by count: Int) -> String {
        let prefix = String(repeating: " ", count: count)
        return split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 }.joined(separator: "\n")
    }
}
