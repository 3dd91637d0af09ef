import Logging

/// Logs what a wall refuses at `warning`, at most once per reason every ``interval``, with how
/// many refusals for that reason went unlogged meanwhile: a fuzzer's flood of bad messages is
/// counted in full (metrics) and logged in proportion.
struct RefusalLog: Sendable {
    /// The process refusing: "coordinator", "node-2".
    let wall: String
    /// Microseconds between two log lines for the same reason.
    var interval: UInt64 = 10_000_000
    private var lastLogged: [ProtocolError.Code: (at: UInt64, unlogged: Int)] = [:]

    init(wall: String) {
        self.wall = wall
    }

    mutating func note(_ error: ProtocolError, now: UInt64, into observations: inout Observations) {
        if let last = lastLogged[error.code], now >= last.at, now - last.at < interval {
            lastLogged[error.code]!.unlogged += 1
            return
        }
        let unlogged = lastLogged[error.code]?.unlogged ?? 0
        lastLogged[error.code] = (now, 0)
        var metadata: Logger.Metadata = ["flowkit.wall": "\(wall)", "flowkit.reason": "\(error.code.metricLabel)"]
        if unlogged > 0 { metadata["flowkit.unlogged"] = "\(unlogged)" }
        observations.log(.warning, "refused: \(error.message)", metadata)
    }
}
