import ArgumentParser
import FlowKitCommands
import Logging
import Synchronization

/// The report of a run that checks invariants (`flowkit chaos`, `flowkit fuzz`): a table for
/// people, JSON for scripts, and whether every check held.
protocol CheckedReport: Encodable, Sendable {
    var text: String { get }
    var passed: Bool { get }
}

/// Runs `session` until it ends or SIGINT/SIGTERM asks it to (`stop` is set), then prints its
/// report: the table on standard output, or with `json` the table on standard error and one JSON
/// line on standard output.
///
/// - Throws: `ExitCode.failure` when the run could not be set up; exit code 6 when a check failed.
func runCheckedSession<Report: CheckedReport>(
    json: Bool,
    stop: StopFlag,
    logger: Logger,
    _ session: @escaping @Sendable () async throws -> Report
) async throws {
    let result = Mutex<Result<Report, any Error>?>(nil)
    try await ShutdownService.run(logger: logger) {
        let outcome: Result<Report, any Error>
        do {
            outcome = .success(try await session())
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
    } stop: {
        stop.set()
    }
    let report: Report
    do {
        guard let outcome = result.withLock({ $0 }) else { throw ChaosError("the run was interrupted") }
        report = try outcome.get()
    } catch {
        printError("error: \(error)")
        throw ExitCode.failure
    }
    if json {
        printError(report.text)
        printFlushed(jsonLine(report))
    } else {
        printFlushed(report.text)
    }
    if !report.passed { throw ExitCode(ExitCodes.checkFailed) }
}
