import Clocks
import Dependencies
import FlowKit
import Synchronization

/// A flow built to pin down the store's races: its effects record what they did in a ``Probe``.
struct ProbeFlow: Flow {
    struct State: Equatable, Sendable, Codable {
        var count = 0
        var finished: [String] = []
    }

    enum Event: Equatable, Sendable {
        case increment
        /// Starts a long effect named `name` under cancel id `id`.
        case start(name: String, id: String, cancelInFlight: Bool)
        case stop(id: String)
        /// `.merge(start, cancel)` of the same id, in one return.
        case startThenCancel(name: String, id: String)
        /// `.merge(cancel, start)` of the same id, in one return.
        case cancelThenStart(name: String, id: String)
        case effectFinished(String)
        case fail(String)
        case failWithCancellation
        case chain(Int)
    }

    struct Failure: Error, Equatable {
        var message: String
    }

    @Dependency(\.continuousClock) var clock
    @Dependency(Probe.self) var probe

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .increment:
            state.count += 1
            return .none
        case .start(let name, let id, let cancelInFlight):
            return long(name).cancellable(id: id, cancelInFlight: cancelInFlight)
        case .stop(let id):
            return .cancel(id: id)
        case .startThenCancel(let name, let id):
            return .merge(long(name).cancellable(id: id), .cancel(id: id))
        case .cancelThenStart(let name, let id):
            return .merge(.cancel(id: id), long(name).cancellable(id: id))
        case .effectFinished(let name):
            state.finished.append(name)
            return .none
        case .fail(let message):
            return .run { _ in throw Failure(message: message) }
        case .failWithCancellation:
            return .run { _ in throw CancellationError() }
        case .chain(let remaining):
            state.count += 1
            return remaining > 0 ? .send(.chain(remaining - 1)) : .none
        }
    }

    /// Sleeps for a second on the clock, then reports that it finished; records that it started.
    private func long(_ name: String) -> Effect<Event> {
        .run { [probe, clock] send in
            probe.record("\(name) started")
            do {
                try await clock.sleep(for: .seconds(1))
            } catch {
                probe.record("\(name) cancelled")
                throw error
            }
            await send(.effectFinished(name))
        }
    }
}

/// What effects did, in order, readable from the test.
final class Probe: TestDependencyKey, Sendable {
    private let events = Mutex<[String]>([])

    static var testValue: Probe { Probe() }

    func record(_ event: String) {
        events.withLock { $0.append(event) }
    }

    var recorded: [String] { events.withLock { $0 } }
}
