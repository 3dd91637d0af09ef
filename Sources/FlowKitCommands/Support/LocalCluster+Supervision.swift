import FlowKitProcesses
import Foundation

extension LocalCluster {
    // MARK: Supervision

    /// A crashed node waiting to start again.
    struct Restart {
        /// Failures in a row: the backoff doubles with each, from 1 s up to 30 s.
        var count: Int
        var at: ContinuousClock.Instant
    }

    /// Watches the nodes and restarts one that exits with a failure (killed by a signal, or a
    /// non-zero exit code), as systemd's `Restart=on-failure` does for deploy/: after 1 s, then
    /// 2, 4, … up to 30 s while it keeps failing (a node that ran a minute starts over at 1 s). A
    /// node that exits cleanly (stopped by hand, exit code 0) is left stopped. Restarted with its
    /// id, its endpoint and its data directory: a new process, whose predecessor's effects the
    /// coordinator takes over. Each decision is handed to `say`, for the live view.
    ///
    /// - Returns: The watching task; cancel it to stop supervising (``stop()`` does not restart).
    package func superviseNodes(say: @escaping @Sendable (String) -> Void) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                await superviseOnce(say: say)
            }
        }
    }

    func superviseOnce(say: (String) -> Void) async {
        reapCoordinators(say: say)
        let now = ContinuousClock.now
        for id in nodes.keys.sorted() {
            guard !stopping, let child = nodes[id], let status = child.reapIfExited() else { continue }
            if status == 0 {
                if leftStopped.insert(id).inserted { say("node-\(id) stopped (exit code 0): left stopped; restart it with its command in cluster.json") }
                continue
            }
            guard let restart = restarts[id] else {
                let count = now - child.startedAt >= Self.stableAfter ? 0 : (lastRestartCount[id] ?? 0)
                let delay = Self.backoff(afterFailures: count)
                restarts[id] = Restart(count: count + 1, at: now + delay)
                say("node-\(id) exited (\(ChildProcess.describe(status))): restarting in \(delay)")
                continue
            }
            guard now >= restart.at else { continue }
            do {
                let entry = try await startNode(id: id)
                guard !stopping else { return }
                restarts[id] = nil
                lastRestartCount[id] = restart.count
                try? file?.write(directory: directory)
                say("node-\(id) restarted (pid \(entry.pid), restart \(restart.count) in a row)")
            } catch {
                let delay = Self.backoff(afterFailures: restart.count)
                restarts[id] = Restart(count: restart.count + 1, at: ContinuousClock.now + delay)
                say("node-\(id) did not start again (\(error)); trying in \(delay)")
            }
        }
    }

    /// Reaps a coordinator that exited (stopped or killed from outside, or failed), and says so
    /// once: coordinators are not restarted here (a replicated group elects another leader; the
    /// failover scripts start the killed one again themselves), but neither do they linger as
    /// zombies until the cluster stops.
    private func reapCoordinators(say: (String) -> Void) {
        let coordinators = [coordinator.map { ("the coordinator", $0) }].compactMap { $0 }
            + replicated.sorted { $0.key < $1.key }.map { ("coordinator \($0.key)", $0.value) }
        for (name, child) in coordinators {
            guard !stopping, let status = child.reapIfExited(), reapedCoordinators.insert(child.pid).inserted else { continue }
            say("\(name) exited (\(ChildProcess.describe(status))): not restarted; start it again with its command in cluster.json")
        }
    }

    /// 1 s after the first failure, doubling up to 30 s.
    package static func backoff(afterFailures count: Int) -> Duration {
        .seconds(min(30, 1 << min(count, 5)))
    }
}
