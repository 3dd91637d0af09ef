import FlowKitCluster
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// Shows a cluster as it runs: on a terminal a screen redrawn twice a second, elsewhere one line per
/// entry, status and alarm (or JSON lines).
package enum LiveView {
    package enum Format { case screen, lines, json }

    package static func run(
        publishEndpoints: [String],
        topics: [String],
        transport: TransportOptions = TransportOptions(),
        serverKey: CurveKey? = nil,
        view: MonitorView,
        title: String,
        format: Format? = nil,
        deadline: ContinuousClock.Instant?,
        heartbeats: Bool = false,
        stop: StopFlag,
        logger: Logger,
        onEvent: @escaping @Sendable (ClusterMonitor.Event) -> Void = { _ in }
    ) async throws {
        let format = format ?? (standardOutputIsTerminal ? .screen : .lines)
        let monitor = try await ClusterMonitor(
            publishEndpoints: publishEndpoints, topics: topics, transport: transport, serverPublicKey: serverKey, logger: logger
        )
        let buffer = EventBuffer()
        let events = monitor.events
        let reader = Task {
            do {
                for try await event in events { buffer.append(event) }
            } catch {}
        }
        var view = view
        var lastDraw = ContinuousClock.now - .seconds(1)
        while !stop.isSet {
            if let deadline, ContinuousClock.now >= deadline { break }
            try? await Task.sleep(for: .milliseconds(100))
            for event in buffer.drain() {
                onEvent(event)
                switch format {
                case .lines: view.line(for: event).forEach(printFlushed)
                case .json:
                    if case .heartbeat = event, !heartbeats { break }
                    MonitorView.json(for: event).forEach(printFlushed)
                case .screen: break
                }
                view.apply(event)
            }
            if format == .screen, ContinuousClock.now - lastDraw >= .milliseconds(500) {
                lastDraw = ContinuousClock.now
                printFlushed("\u{1B}[H\u{1B}[2J" + view.render(title: title))
            }
        }
        reader.cancel()
        await monitor.close()
    }
}

/// Events received and not yet shown, bounded: a view that cannot keep up drops the oldest.
package final class EventBuffer: Sendable {
    private let events = Mutex<[ClusterMonitor.Event]>([])
    package let capacity = 10_000

    package func append(_ event: ClusterMonitor.Event) {
        events.withLock { events in
            events.append(event)
            if events.count > capacity { events.removeFirst(events.count - capacity) }
        }
    }

    package func drain() -> [ClusterMonitor.Event] {
        events.withLock { events in
            defer { events = [] }
            return events
        }
    }
}

/// A flag set when a signal asks the process to stop, polled by loops.
package final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    package func set() { flag.store(true, ordering: .relaxed) }
    package var isSet: Bool { flag.load(ordering: .relaxed) }
}
