@_spi(Wire) import FlowKitCluster
import Histogram
import Synchronization

/// Turns EMITTED replies and PROGRESS reports into latencies, counts and throughput for one step.
///
/// * ordered latency = arrival of the EMITTED reply − the event's intended send time;
/// * applied latency = the time the *last* node reported `applied ≥ seq` − the intended send time.
///
/// An acknowledged event waits in `pending` until every node's timeline has passed its seq. Work
/// is done per batch of replies or reports, under one lock; both arrive on the bench's I/O thread.
final class LatencyRecorder: Sendable {
    /// What the end of a step needs.
    struct Outcome: Sendable {
        var ordered: Histogram<UInt64>
        var applied: Histogram<UInt64>
        var acknowledgedPerInstance: [Int]
        var refusedPerInstance: [Int]
        var acknowledged: Int
        var refused: Int
        var answered: Int
        var errors: [String: Int]
        var acknowledgedInWindow: Int
        var appliedPending: Int
    }

    /// The live line's figures since the previous call.
    struct Interval: Sendable {
        var acknowledged: Int
        var ordered: LatencySummary
        var applied: LatencySummary
        /// Each node's applied seq.
        var appliedSeqs: [UInt64]
    }

    private struct Pending {
        var seq: UInt64
        var intended: UInt64
        var measured: Bool
    }

    private struct State {
        var plan: LoadPlan?
        var ordered = LatencyRecorder.histogram()
        var applied = LatencyRecorder.histogram()
        var intervalOrdered = LatencyRecorder.histogram()
        var intervalApplied = LatencyRecorder.histogram()
        var intervalAcknowledged = 0
        var acknowledgedPerInstance: [Int] = []
        var refusedPerInstance: [Int] = []
        var acknowledged = 0
        var refused = 0
        var answered = 0
        var errors: [String: Int] = [:]
        var acknowledgedInWindow = 0
        var pending: [Pending] = []
        var timelines: [ApplyTimeline]
        var lastResolve: UInt64 = 0
        var lastTrim: UInt64 = 0
        /// With tracing: the sampled events' request index and EMITTED arrival, by seq.
        var traced: [UInt64: (index: Int, arrival: UInt64)] = [:]
    }

    private let state: Mutex<State>
    /// With tracing: events whose seq is a multiple of this are remembered (``traced``).
    let traceEvery: UInt64?

    init(nodes: Int, traceEvery: UInt64? = nil) {
        state = Mutex(State(timelines: Array(repeating: ApplyTimeline(), count: nodes)))
        self.traceEvery = traceEvery
    }

    /// The sampled events of this step: request index and EMITTED arrival, by seq.
    var traced: [UInt64: (index: Int, arrival: UInt64)] { state.withLock { $0.traced } }

    static func histogram() -> Histogram<UInt64> {
        // Up to an hour, three significant digits.
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    }

    /// Starts a step: clears the counts, keeps the nodes' timelines.
    func begin(_ plan: LoadPlan) {
        state.withLock { state in
            let timelines = state.timelines
            state = State(timelines: timelines)
            state.plan = plan
            state.acknowledgedPerInstance = Array(repeating: 0, count: plan.instances)
            state.refusedPerInstance = Array(repeating: 0, count: plan.instances)
        }
    }

    /// Records a batch of replies that arrived at `arrival` (µs since the epoch).
    func record(replies: [ClientReply], arrival: UInt64) {
        state.withLock { state in
            guard let plan = state.plan else { return }
            let inWindow = arrival >= plan.windowStart && arrival < plan.windowEnd
            for reply in replies {
                switch reply {
                case .emitted(let request, let seq, _, _):
                    guard let index = plan.index(ofRequest: request) else { continue }
                    let intended = plan.intended(index)
                    let latency = arrival > intended ? arrival - intended : 0
                    let measured = intended >= plan.windowStart && intended < plan.windowEnd
                    if measured { state.ordered.record(latency) }
                    state.intervalOrdered.record(latency)
                    state.intervalAcknowledged += 1
                    state.acknowledged += 1
                    state.answered += 1
                    state.acknowledgedPerInstance[plan.instance(index)] += 1
                    if inWindow { state.acknowledgedInWindow += 1 }
                    state.pending.append(Pending(seq: seq, intended: intended, measured: measured))
                    if let every = traceEvery, seq % every == 0 { state.traced[seq] = (index, arrival) }
                case .error(let request, let error):
                    guard let index = plan.index(ofRequest: request) else { continue }
                    state.answered += 1
                    state.errors[error.code.metricLabel, default: 0] += 1
                    // A timeout or an internal error leaves the outcome open: the node keeps
                    // retrying its submission, so the event may still be ordered.
                    if error.code != .coordinatorUnavailable && error.code != .internalError {
                        state.refused += 1
                        state.refusedPerInstance[plan.instance(index)] += 1
                    }
                default:
                    continue
                }
            }
            Self.resolve(&state, now: arrival, force: false)
        }
    }

    /// Records a node's PROGRESS.
    func record(node: Int, applied: UInt64, time: UInt64) {
        state.withLock { state in
            state.timelines[node].add(applied: applied, time: time)
            Self.resolve(&state, now: time, force: false)
        }
    }

    /// Matches acknowledged events with the nodes' timelines; at most every 2 ms unless forced.
    private static func resolve(_ state: inout State, now: UInt64, force: Bool) {
        guard !state.pending.isEmpty, force || now >= state.lastResolve + 2_000 else { return }
        state.lastResolve = now
        let watermark = state.timelines.map(\.applied).min() ?? 0
        var waiting: [Pending] = []
        for event in state.pending {
            guard event.seq <= watermark else {
                waiting.append(event)
                continue
            }
            var last: UInt64 = 0
            for timeline in state.timelines { last = max(last, timeline.time(applying: event.seq) ?? last) }
            let latency = last > event.intended ? last - event.intended : 0
            if event.measured { state.applied.record(latency) }
            state.intervalApplied.record(latency)
        }
        state.pending = waiting
        if now >= state.lastTrim + 1_000_000 {
            state.lastTrim = now
            for node in state.timelines.indices { state.timelines[node].trim(before: now - 30_000_000) }
        }
    }

    /// The figures since the last call, for the live line.
    ///
    /// The second's histograms are swapped for empty ones under the lock and read outside it: the
    /// percentiles walk tens of thousands of buckets, and the bench's I/O thread, recording the
    /// replies as they come, would wait for them.
    func interval() -> Interval {
        var ordered = LatencyRecorder.histogram()
        var applied = LatencyRecorder.histogram()
        let (acknowledged, appliedSeqs) = state.withLock { state in
            swap(&ordered, &state.intervalOrdered)
            swap(&applied, &state.intervalApplied)
            defer { state.intervalAcknowledged = 0 }
            return (state.intervalAcknowledged, state.timelines.map(\.applied))
        }
        return Interval(
            acknowledged: acknowledged,
            ordered: LatencySummary(ordered),
            applied: LatencySummary(applied),
            appliedSeqs: appliedSeqs
        )
    }

    /// Replies received so far in this step (acknowledgements and errors).
    var answered: Int { state.withLock { $0.answered } }

    /// Events acknowledged (ordered) so far in this step.
    var acknowledged: Int { state.withLock { $0.acknowledged } }

    /// Acknowledged events not yet applied by every node.
    var appliedPending: Int { state.withLock { $0.pending.count } }

    /// Each node's latest applied seq.
    var appliedSeqs: [UInt64] { state.withLock { $0.timelines.map(\.applied) } }

    /// Resolves what can be and returns the step's figures.
    func outcome() -> Outcome {
        state.withLock { state in
            Self.resolve(&state, now: BenchClock.wallMicros(), force: true)
            return Outcome(
                ordered: state.ordered,
                applied: state.applied,
                acknowledgedPerInstance: state.acknowledgedPerInstance,
                refusedPerInstance: state.refusedPerInstance,
                acknowledged: state.acknowledged,
                refused: state.refused,
                answered: state.answered,
                errors: state.errors,
                acknowledgedInWindow: state.acknowledgedInWindow,
                appliedPending: state.pending.count
            )
        }
    }
}
