import FlowKitCluster
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// Shows a cluster as it runs: on a terminal a `top`-like screen redrawn in place twice a second
/// (and at once when the terminal is resized; `q` or Ctrl-C quits and leaves the terminal as it
/// was), elsewhere one line per entry (up to `entryLinesPerSecond`) and alarm, and a status line
/// when something changed or every ``repeatStatusAfter`` (or JSON lines).
package enum LiveView {
    /// Line output repeats an unchanged status line after this long: a log shows the cluster is
    /// still there, without a line a second while nothing happens.
    package static let repeatStatusAfter: Duration = .seconds(30)

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
        entryLinesPerSecond: Int? = nil,
        stop: StopFlag,
        logger: Logger,
        supervisor: SupervisorNotes? = nil,
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
        let screen = format == .screen ? TerminalScreen.enter() : nil
        defer { screen?.leave() }
        var lastDraw = ContinuousClock.now - .seconds(1)
        var lastSize = screen?.size
        var statusLines = StatusLineFilter(repeatAfter: repeatStatusAfter)
        var entryLines = EntryLineLimit(perSecond: entryLinesPerSecond)
        while !stop.isSet {
            if let deadline, ContinuousClock.now >= deadline { break }
            if screen?.quitRequested() == true {
                stop.set()
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
            for text in supervisor?.drain() ?? [] {
                switch format {
                case .lines: printFlushed("supervisor: \(text)")
                case .json: printFlushed(JSONValue.object(["type": "supervisor", "message": .string(text)]).text())
                case .screen: break
                }
                view.note(supervisor: text)
            }
            for event in buffer.drain() {
                onEvent(event)
                switch format {
                case .lines:
                    // Entries past the limit are counted, not formatted.
                    if case .entries(let entries) = event {
                        let (shown, summary) = entryLines.admit(entries, at: .now)
                        (summary.map { [$0] } ?? []).forEach(printFlushed)
                        view.line(for: .entries(shown)).forEach(printFlushed)
                    } else {
                        view.line(for: event).filter { statusLines.admits($0, at: .now) }.forEach(printFlushed)
                    }
                case .json:
                    if case .heartbeat = event, !heartbeats { break }
                    MonitorView.json(for: event).forEach(printFlushed)
                case .screen: break
                }
                view.apply(event)
            }
            if let screen {
                let size = screen.size
                let resized = lastSize.map { $0 != size } ?? true
                if resized || ContinuousClock.now - lastDraw >= .milliseconds(500) {
                    lastDraw = ContinuousClock.now
                    lastSize = size
                    screen.draw(view.screen(title: title, rows: size.rows, columns: size.columns))
                }
            }
        }
        reader.cancel()
        await monitor.close()
    }
}

/// Lets a status line through when it says something the last one did not, or the last is
/// older than `repeatAfter`; every other line passes.
package struct StatusLineFilter {
    let repeatAfter: Duration
    private var last: (line: String, at: ContinuousClock.Instant)?

    package init(repeatAfter: Duration) {
        self.repeatAfter = repeatAfter
    }

    package mutating func admits(_ line: String, at now: ContinuousClock.Instant) -> Bool {
        guard line.hasPrefix("status ") else { return true }
        if let last, last.line == line, now - last.at < repeatAfter { return false }
        last = (line, now)
        return true
    }
}

/// At most `perSecond` entry lines a second (none: every one); the rest are counted, and the next
/// second begins with how many were left out. A log of a cluster under load stays readable, and
/// printing costs the cluster nothing measurable.
package struct EntryLineLimit {
    let perSecond: Int?
    private var second = ContinuousClock.now
    private var printed = 0
    private var skipped = 0

    package init(perSecond: Int?) {
        self.perSecond = perSecond
    }

    /// The entries to print now, and the line saying how many the last second left out.
    package mutating func admit<Item>(_ items: [Item], at now: ContinuousClock.Instant) -> (shown: [Item], summary: String?) {
        guard let perSecond else { return (items, nil) }
        var summary: String?
        if now - second >= .seconds(1) {
            if skipped > 0 { summary = "… \(skipped) more entries in that second (flowkit monitor prints every one)" }
            second = now
            printed = 0
            skipped = 0
        }
        let room = max(0, perSecond - printed)
        printed += min(room, items.count)
        skipped += max(0, items.count - room)
        return (Array(items.prefix(room)), summary)
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

/// What a local cluster's supervisor said, waiting for the live view to show it.
package final class SupervisorNotes: Sendable {
    private let notes = Mutex<[String]>([])

    package init() {}

    package func say(_ text: String) { notes.withLock { $0.append(text) } }

    func drain() -> [String] {
        notes.withLock { notes in
            defer { notes = [] }
            return notes
        }
    }
}
