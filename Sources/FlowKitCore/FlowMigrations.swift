import Foundation

/// How a replicated flow reads what older versions of its code wrote: one step per version, from
/// an event or state as version `n` encoded it to what version `n + 1` encodes.
///
/// A step decodes the stored JSON as the old version's type (a plain `Codable` type the flow keeps,
/// copied from the old release, for as long as a log may hold its entries) and returns the next
/// version's values; an event step returns zero events (dropped), one, or several (split).
///
/// ```swift
/// let migrations = FlowMigrations<CounterFlow>()
///     .events(from: 1, as: CounterFlowV1.Event.self) { old in
///         switch old {
///         case .add(let amount): [.increment(amount: amount, reason: nil)]
///         case .reset: [.reset]
///         }
///     }
///     .state(from: 1, as: CounterFlowV1.State.self) { old in CounterFlow.State(total: old.count) }
/// let events = try migrations.events(from: 1, json: Array(#"{"add":{"_0":5}}"#.utf8), to: 2)
/// ```
///
/// A value, tested like a reducer: an old payload pinned to what it becomes. Steps that skip a
/// version or repeat one are found by ``check(readingFrom:to:)``, not when an old entry arrives.
public struct FlowMigrations<F: Flow>: Sendable where F.Event: Codable, F.State: Codable {
    /// One step: JSON as version `n` wrote it → JSON as version `n + 1` writes it (several for
    /// events: an event may become none, or several).
    typealias Step = @Sendable ([UInt8]) throws -> [[UInt8]]

    private var eventSteps: [Int: Step] = [:]
    private var stateSteps: [Int: Step] = [:]
    /// Steps registered twice, for ``check(readingFrom:to:)``.
    private var repeated: [String] = []

    public init() {}

    // MARK: Declaring steps

    /// Events as version `version` wrote them, decoded as `Old`, become version `version + 1`'s
    /// events of type `New`.
    public func events<Old: Decodable & SendableMetatype, New: Encodable & SendableMetatype>(
        from version: Int, as old: Old.Type, to new: New.Type, _ step: @escaping @Sendable (Old) throws -> [New]
    ) -> Self {
        adding(event: version) { json in try step(Self.decode(Old.self, json, version: version, what: "event")).map(Self.encode) }
    }

    /// Events as version `version` wrote them, decoded as `Old`, become the flow's current events:
    /// the step into the current version.
    public func events<Old: Decodable & SendableMetatype>(from version: Int, as old: Old.Type, _ step: @escaping @Sendable (Old) throws -> [F.Event]) -> Self {
        events(from: version, as: old, to: F.Event.self, step)
    }

    /// Events as version `version` wrote them, as JSON bytes, become version `version + 1`'s, as
    /// JSON bytes: for a change easier on the text than on types (a key renamed).
    public func events(from version: Int, json step: @escaping @Sendable ([UInt8]) throws -> [[UInt8]]) -> Self {
        adding(event: version, step)
    }

    /// A state as version `version` wrote it (a snapshot), decoded as `Old`, becomes version
    /// `version + 1`'s state of type `New`.
    public func state<Old: Decodable & SendableMetatype, New: Encodable & SendableMetatype>(
        from version: Int, as old: Old.Type, to new: New.Type, _ step: @escaping @Sendable (Old) throws -> New
    ) -> Self {
        adding(state: version) { json in [try Self.encode(step(Self.decode(Old.self, json, version: version, what: "state")))] }
    }

    /// A state as version `version` wrote it, decoded as `Old`, becomes the flow's current state.
    public func state<Old: Decodable & SendableMetatype>(from version: Int, as old: Old.Type, _ step: @escaping @Sendable (Old) throws -> F.State) -> Self {
        state(from: version, as: old, to: F.State.self, step)
    }

    /// A state as version `version` wrote it, as JSON bytes, becomes version `version + 1`'s.
    public func state(from version: Int, json step: @escaping @Sendable ([UInt8]) throws -> [UInt8]) -> Self {
        adding(state: version) { json in [try step(json)] }
    }

    /// Version `version + 1` reads version `version`'s events as they were written: the release
    /// changed only the state.
    public func eventsUnchanged(from version: Int) -> Self {
        adding(event: version) { [$0] }
    }

    /// Version `version + 1` reads version `version`'s state as it was written: the release changed
    /// only the events.
    public func stateUnchanged(from version: Int) -> Self {
        adding(state: version) { [$0] }
    }

    // MARK: Reading old versions

    /// The events an event `json` that version `version` wrote is in version `current`, through
    /// every step between; decoded as the flow's events when `current` is its version.
    ///
    /// - Throws: ``FlowMigrationError`` when a step is missing or fails, or the result does not
    ///   decode.
    public func events(from version: Int, json: [UInt8], to current: Int) throws -> [F.Event] {
        try run(eventSteps, from: version, json: json, to: current, what: "event").map { try Self.decode(F.Event.self, $0, version: current, what: "event") }
    }

    /// The state a snapshot's `json`, which version `version` wrote, is in version `current`.
    public func state(from version: Int, json: [UInt8], to current: Int) throws -> F.State {
        let states = try run(stateSteps, from: version, json: json, to: current, what: "state")
        guard states.count == 1 else { throw FlowMigrationError("a state step returned \(states.count) states") }
        return try Self.decode(F.State.self, states[0], version: current, what: "state")
    }

    /// The versions a build at `current` reads: from the oldest its steps chain up from, to
    /// `current` (just `current` without steps).
    ///
    /// - Throws: ``FlowMigrationError`` for a step repeated, one from `current` or later, one no
    ///   chain to `current` reaches (a version between without a step), or a version with an event
    ///   step and no state step or the other way round.
    public func readableVersions(upTo current: Int) throws -> ClosedRange<Int> {
        var oldest = current
        while oldest > 1, eventSteps[oldest - 1] != nil || stateSteps[oldest - 1] != nil { oldest -= 1 }
        try check(readingFrom: oldest, to: current)
        let stranded = Set(eventSteps.keys).union(stateSteps.keys).filter { $0 < oldest }.sorted()
        guard stranded.isEmpty else {
            let versions = stranded.map(String.init).joined(separator: ", ")
            throw FlowMigrationError(
                "steps from version \(versions) lead nowhere: there is no step from version \(oldest - 1), so version \(current) is reached from \(oldest) only"
            )
        }
        return oldest...current
    }

    /// Whether every version from `oldest` to `current` can be read: a step for each, none twice.
    ///
    /// - Throws: ``FlowMigrationError`` naming the versions without a step, or repeated.
    public func check(readingFrom oldest: Int, to current: Int) throws {
        var problems = repeated
        for version in oldest..<max(oldest, current) {
            if eventSteps[version] == nil { problems.append("no event step from version \(version)") }
            if stateSteps[version] == nil { problems.append("no state step from version \(version)") }
        }
        for version in Set(eventSteps.keys).union(stateSteps.keys).sorted() where version >= current {
            problems.append("a step from version \(version), which is not older than the current version \(current)")
        }
        guard problems.isEmpty else { throw FlowMigrationError(problems.joined(separator: "; ")) }
    }

    // MARK: Internals

    private func adding(event version: Int, _ step: @escaping Step) -> Self {
        var copy = self
        if copy.eventSteps.updateValue(step, forKey: version) != nil { copy.repeated.append("two event steps from version \(version)") }
        return copy
    }

    private func adding(state version: Int, _ step: @escaping Step) -> Self {
        var copy = self
        if copy.stateSteps.updateValue(step, forKey: version) != nil { copy.repeated.append("two state steps from version \(version)") }
        return copy
    }

    private func run(_ steps: [Int: Step], from version: Int, json: [UInt8], to current: Int, what: String) throws -> [[UInt8]] {
        guard version <= current else {
            throw FlowMigrationError("\(what) of version \(version) is newer than this build's version \(current)")
        }
        var values = [json]
        for step in version..<current {
            guard let next = steps[step] else { throw FlowMigrationError("no \(what) step from version \(step) to \(step + 1)") }
            values = try values.flatMap { value in
                do {
                    return try next(value)
                } catch let error as FlowMigrationError {
                    throw error
                } catch {
                    throw FlowMigrationError("the \(what) step from version \(step) failed: \(error)")
                }
            }
        }
        return values
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ json: [UInt8], version: Int, what: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(json))
        } catch {
            throw FlowMigrationError("the \(what) \(String(decoding: json, as: UTF8.self)) does not decode as version \(version)'s \(type): \(error)")
        }
    }

    private static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(value))
    }
}

/// Why an old version's event or state could not be read, or a flow's steps do not cover its
/// versions.
public struct FlowMigrationError: Error, Equatable, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
