import FlowKitCore
import Foundation

/// The flow a simulation's clients drive: every event carries a token no other event carries, so
/// an acknowledged event can be found in the log, and the state is the tokens in the order they
/// were applied, so two replicas agree only if they applied the same entries in the same order.
/// A `work` event starts an effect that runs until it is cancelled by its token: the checks find
/// it running on its owner (its origin, or the node a takeover moved it to), and nowhere else,
/// unless a cancel was ordered after it. While it runs, the simulation has it send `tick`s (under
/// its ownership term), so a takeover and its fencing show in the log; `resume` starts every work
/// effect again, and the cluster drops those cancelled.
///
/// Its reducer reads `uuid`, `date` and random numbers, as TCA reducers do: each entry also leaves
/// a mark made of them, which every replica must compute alike (they derive from the entry).
struct SimulationFlow: ReplicatedFlow {
    struct State: Codable, Hashable, Sendable {
        var tokens: [String] = []
        /// Per entry: a UUID, the time and a die roll, as the reducer read them.
        var marks: [String] = []
        /// The tokens of the `work` events: what `resume` starts again.
        var work: [String] = []
    }

    @Dependency(\.uuid) var uuid
    @Dependency(\.date.now) var now
    @Dependency(\.withRandomNumberGenerator) var withRandomNumberGenerator

    enum Event: Codable, Hashable, Sendable {
        case append(String)
        /// Starts an effect, cancellable by the token, that never ends by itself.
        case work(String)
        /// Sent by the running effect of `work` (the simulation sends it for the effect, under the
        /// effect's term); `id` is unique to the tick.
        case tick(work: String, id: String)
    }

    static let initialState = State()

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        state.marks.append(Self.mark(uuid: uuid, now: now, random: withRandomNumberGenerator))
        guard let started = Self.record(event, tokens: &state.tokens, work: &state.work) else { return .none }
        return Self.working(started)
    }

    /// What the reducer reads of its entry's dependencies (its flow's `@Dependency` values, which
    /// the replica sets from the entry): a UUID, the time and a die roll.
    static func mark(uuid: UUIDGenerator, now: Date, random: WithRandomNumberGenerator) -> String {
        let roll = random { Int.random(in: 1...6, using: &$0) }
        return "\(uuid().uuidString.prefix(8)) \(Int(now.timeIntervalSince1970 * 1_000)) \(roll)"
    }

    /// Adds the event's token (a tick's id) to `tokens`, and a `work` event's to `work`.
    ///
    /// - Returns: The token of the work effect to start, for a `work` event.
    static func record(_ event: Event, tokens: inout [String], work: inout [String]) -> String? {
        tokens.append(token(of: event))
        guard case .work(let token) = event else { return nil }
        work.append(token)
        return token
    }

    /// A work effect, of either build: it runs until cancelled by its token.
    static func working<Action>(_ token: String) -> Effect<Action> {
        .run { _ in try await Task.sleep(for: .seconds(100_000_000)) }.cancellable(id: token)
    }

    static func resume(_ state: State) -> Effect<Event> {
        .merge(state.work.map(working))
    }

    /// The token an event carries.
    static func token(of event: Event) -> String {
        switch event {
        case .append(let token), .work(let token), .tick(_, let token): token
        }
    }
}
