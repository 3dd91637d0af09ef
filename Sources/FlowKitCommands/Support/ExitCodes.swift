import ArgumentParser
import FlowKitCluster

/// Exit codes scripts can rely on (README, "Exit codes").
package enum ExitCodes {
    /// The node or coordinator did not answer in time.
    package static let unreachable: Int32 = 3
    /// The cluster refused the request: unknown flow, bad event, bad address.
    package static let refused: Int32 = 4
    /// The cluster is overloaded or cannot reach its coordinator: retry later.
    package static let retryLater: Int32 = 5
    /// A check failed (bench convergence, chaos invariants).
    package static let checkFailed: Int32 = 6
}

/// Turns an error into a message with the fix, and the exit code that goes with it.
package func fail(_ error: any Error) -> ExitCode {
    switch error {
    case let error as ProtocolError:
        printError("error: \(error.code): \(error.message)")
        switch error.code {
        case .overloaded, .coordinatorUnavailable: return ExitCode(ExitCodes.retryLater)
        default: return ExitCode(ExitCodes.refused)
        }
    case let error as ClusterClientError:
        printError("error: \(error)")
        return ExitCode(ExitCodes.unreachable)
    default:
        printError("error: \(error)")
        return .failure
    }
}
