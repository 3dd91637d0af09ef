@_spi(Wire) import FlowKitCluster
import FlowKitCommands
import Foundation
import Synchronization
import ZeroMQ

/// Sends a step's events open-loop, on the I/O loop of the bench's sockets: event `i` leaves at
/// `start + i / rate` whatever the replies do, so a slow cluster cannot slow the offered load down.
///
/// The sender is a task on the loop's thread, paced by ``IOLoop/sleep(until:tolerance:)``: it
/// sends what is due in any turn of the loop after the next event's time (replies wake the loop
/// often under load), and wakes the loop itself at most once a tick, queuing what is due; the loop
/// writes it in the same turn, between reading replies. That is a C load generator on `ppoll`,
/// which sends what is due whenever it wakes; a sender thread of its own would wake two threads
/// (itself, then the loop to write).
///
/// When the sender falls behind (its thread was descheduled, or a socket's queue was full) it sends
/// what is due at once, and latency is still measured from each event's *intended* time. That is
/// the correction for coordinated omission: a closed-loop tester would wait, send later, and time
/// from the late send, hiding exactly the stalls a user would see.
final class OpenLoopSender: Sendable {
    /// What a step's sending did.
    struct Report: Sendable {
        var sent: Int
        /// Per instance, how many of its events were handed to a socket.
        var sentPerInstance: [Int]
        /// Events still unsent when the overrun limit ran out (the bench could not keep up).
        var unsent: Int
        /// Seconds past the schedule's end until the last event went out.
        var overrunSeconds: Double
        /// With tracing: when each event was handed to its socket (µs since the epoch; 0 if never).
        var sentAt: [UInt64]?
    }

    private let sentCount = Atomic<Int>(0)

    /// Events handed to a socket so far in the current step.
    var sent: Int { sentCount.load(ordering: .relaxed) }

    /// Runs the plan on `loop`, the loop of `sockets`, and returns when every event is sent, the
    /// overrun limit is reached, or `stop` is set.
    ///
    /// - Parameter tick: The shortest sleep between two rounds of sending, in microseconds: each
    ///   round sends everything due. Shorter ticks send closer to the intended times but wake the
    ///   loop more often (a cost the cluster shares on a small machine); the delay is counted in
    ///   the latencies either way.
    func run(
        plan: LoadPlan, payload: [UInt8], codec: PayloadCodec, sockets: [AsyncSocket], loop: IOLoop, tick: UInt64, maxOverrun: Double,
        stop: StopFlag, recordSendTimes: Bool = false
    ) async -> Report {
        sentCount.store(0, ordering: .relaxed)
        return await Task(executorPreference: loop) { [self] in
            await send(
                plan: plan, payload: payload, codec: codec, sockets: sockets, loop: loop, tick: tick, maxOverrun: maxOverrun, stop: stop,
                recordSendTimes: recordSendTimes
            )
        }.value
    }

    private func send(
        plan: LoadPlan, payload: [UInt8], codec: PayloadCodec, sockets: [AsyncSocket], loop: IOLoop, tick: UInt64, maxOverrun: Double,
        stop: StopFlag, recordSendTimes: Bool
    ) async -> Report {
        /// Sleeps on the loop for `micros`; the loop reads and writes meanwhile.
        func sleep(micros: UInt64) async {
            try? await loop.sleep(until: .now + .microseconds(micros))
        }
        /// Sleeps until `micros` from now, or any turn of the loop after that, but no longer than
        /// `atLeast` from now when that is later.
        func sleep(micros: UInt64, atLeast: UInt64) async {
            let now = ContinuousClock.now
            try? await loop.sleep(until: now + .microseconds(micros), tolerance: .microseconds(atLeast > micros ? atLeast - micros : 0))
        }
        var sentAt = recordSendTimes ? [UInt64](repeating: 0, count: plan.count) : []
        let payloadFrame = Frame(payload)
        let headers = plan.addresses.map { address in
            // The header frame with request id 0, patched per event.
            ClientRequest.emit(request: 0, wait: .ordered, codec: codec, address: address, payload: []).frames[0]
        }
        var backlogs = Array(repeating: [Message](), count: sockets.count)
        var sentPerInstance = Array(repeating: 0, count: plan.instances)
        var next = 0
        var sent = 0
        let end = plan.intended(plan.count) + UInt64(maxOverrun * 1e6)
        let burst = 4_096
        while !stop.isSet {
            let now = BenchClock.wallMicros()
            if now >= end { break }
            // Everything due by now, a bounded burst at a time.
            let elapsed = now >= plan.startMicros ? Double(now - plan.startMicros) / 1e6 : -1
            let due = elapsed < 0 ? 0 : min(plan.count, Int(elapsed * plan.rate) + 1)
            let upTo = min(due, next + burst)
            while next < upTo {
                let instance = plan.instance(next)
                var header = headers[instance]
                Self.patchRequest(plan.firstRequest + UInt64(next), into: &header)
                backlogs[plan.connection(next)].append(Message(frames: [Frame(header), payloadFrame]))
                sentPerInstance[instance] += 1
                next += 1
            }
            var blocked = false
            for index in sockets.indices where !backlogs[index].isEmpty {
                let queued = (try? sockets[index].trySend(contentsOf: backlogs[index])) ?? 0
                if recordSendTimes, queued > 0 {
                    let handed = BenchClock.wallMicros()
                    for message in backlogs[index].prefix(queued) {
                        if let event = Self.requestIndex(message, plan: plan) { sentAt[event] = handed }
                    }
                }
                sent += queued
                if queued == backlogs[index].count {
                    backlogs[index].removeAll(keepingCapacity: true)
                } else {
                    backlogs[index].removeFirst(queued)
                    blocked = true
                }
            }
            sentCount.store(sent, ordering: .relaxed)
            if next >= plan.count, !blocked, backlogs.allSatisfy(\.isEmpty) { break }
            if blocked || next < due {
                if blocked { await sleep(micros: 100) }
                continue
            }
            // Until the next event is due, or the first turn of the loop after that, waking the loop
            // itself at most once a tick (and at least every 2 ms, to see the end and the stop).
            let wake = plan.intended(next)
            let now2 = BenchClock.wallMicros()
            await sleep(micros: min(wake > now2 ? wake - now2 : 0, max(tick, 2_000)), atLeast: tick)
        }
        let unsentInBacklog = backlogs.reduce(0) { $0 + $1.count }
        // Events never sent are not counted as sent for their instance.
        if unsentInBacklog > 0 {
            for backlog in backlogs {
                for message in backlog {
                    guard let index = Self.requestIndex(message, plan: plan) else { continue }
                    sentPerInstance[plan.instance(index)] -= 1
                }
            }
        }
        let finish = BenchClock.wallMicros()
        let scheduleEnd = plan.intended(plan.count)
        return Report(
            sent: sent,
            sentPerInstance: sentPerInstance,
            unsent: plan.count - sent,
            overrunSeconds: finish > scheduleEnd ? Double(finish - scheduleEnd) / 1e6 : 0,
            sentAt: recordSendTimes ? sentAt : nil
        )
    }

    /// Writes the request id into an EMIT header (bytes 4..<12, big-endian).
    @inline(__always)
    private static func patchRequest(_ request: UInt64, into header: inout [UInt8]) {
        for offset in 0..<8 { header[4 + offset] = UInt8(truncatingIfNeeded: request >> (56 - 8 * UInt64(offset))) }
    }

    private static func requestIndex(_ message: Message, plan: LoadPlan) -> Int? {
        let header = message[0].bytes
        guard header.count >= 12 else { return nil }
        let request = header[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return plan.index(ofRequest: request)
    }
}
