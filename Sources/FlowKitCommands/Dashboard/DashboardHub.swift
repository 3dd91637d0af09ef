import FlowKitCluster
import Foundation
import Synchronization

/// What the dashboard's pages are told: the monitor's events as JSON lines, the same schema as
/// `flowkit monitor --json` (docs/DASHBOARD.md), and, for a page that just opened, where things
/// stand (the last status, the latest entries and alarms).
///
/// Heartbeats (ten a second) go out at most four times a second; a page that cannot keep up loses
/// the oldest lines it has not been sent, never the hub's state.
package final class DashboardHub: Sendable {
    private struct State {
        var status: String?
        var heartbeat: String?
        var entries: [String] = []
        var alarms: [String] = []
        var pages: [UInt64: AsyncStream<String>.Continuation] = [:]
        var nextPage: UInt64 = 1
        var lastHeartbeatSent = ContinuousClock.now - .seconds(1)
    }

    private let state = Mutex(State())
    /// How many of the latest entries a page gets when it opens.
    package let keptEntries: Int

    package init(keptEntries: Int = 500) {
        self.keptEntries = keptEntries
    }

    /// Takes in one monitor event and passes it on to every page.
    package func publish(_ event: ClusterMonitor.Event) {
        let lines = MonitorView.json(for: event)
        state.withLock { state in
            switch event {
            case .status: state.status = lines.last
            case .entries:
                state.entries.append(contentsOf: lines)
                if state.entries.count > keptEntries { state.entries.removeFirst(state.entries.count - keptEntries) }
            case .alarm:
                state.alarms.append(contentsOf: lines)
                if state.alarms.count > 20 { state.alarms.removeFirst(state.alarms.count - 20) }
            case .heartbeat:
                state.heartbeat = lines.last
                guard ContinuousClock.now - state.lastHeartbeatSent >= .milliseconds(250) else { return }
                state.lastHeartbeatSent = .now
            case .fellBehind:
                break
            }
            for page in state.pages.values {
                for line in lines { page.yield(line) }
            }
        }
    }

    /// Where things stand, as the lines a page replays before the live ones.
    package var snapshot: [String] {
        state.withLock { state in
            [state.status, state.heartbeat].compactMap { $0 } + state.alarms + state.entries
        }
    }

    /// A page opens: the lines to replay, and every line from now on until it ``leave(_:)``s.
    package func join() -> (page: UInt64, snapshot: [String], lines: AsyncStream<String>) {
        let (lines, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(4_096))
        return state.withLock { state in
            let page = state.nextPage
            state.nextPage += 1
            state.pages[page] = continuation
            let snapshot = [state.status, state.heartbeat].compactMap { $0 } + state.alarms + state.entries
            return (page, snapshot, lines)
        }
    }

    package func leave(_ page: UInt64) {
        state.withLock { $0.pages.removeValue(forKey: page) }?.finish()
    }

    /// Pages open now.
    package var pages: Int { state.withLock { $0.pages.count } }
}
