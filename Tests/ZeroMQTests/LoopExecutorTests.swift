import Synchronization
import Testing
@testable import ZeroMQ

@Suite("IOLoop as a task executor")
struct LoopExecutorTests {
    @Test("a handler preferring the loop serves requests, and can run when the loop stops")
    func echoOnLoop() async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router) { try $0.bind(anyLoopbackPort) }
            let req = try await loop.open(.req) { try $0.connect(endpoint) }
            let server = Task(executorPreference: loop) {
                var served = 0
                for try await batch in router.incoming {
                    for request in batch {
                        try router.trySend([request[0], .empty, Frame("echo " + (request[2].string ?? ""))])
                        served += 1
                    }
                }
                return served
            }
            // REQ strictly alternates: the loop keeps the second request queued until the
            // first reply is in, so sending without waiting is safe here.
            for round in 0..<50 {
                try await req.send(Message("\(round)"))
                #expect(try await req.receive() == Message("echo \(round)"))
            }
            try await req.send(Message("a"))
            try await req.send(Message("b"))
            #expect(try await receive(1, from: req) == [Message("echo a")])
            #expect(try await receive(1, from: req) == [Message("echo b")])
            await loop.shutdown()
            #expect(try await withTimeout(.seconds(5), "the server task") { try await server.value } == 52)
        }
    }

    @Test("a task that prefers the loop resumes on the loop thread after every await")
    func jobsRunOnLoopThread() async throws {
        try await withLoop { _, loop in
            let (pull, endpoint) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let push = try await loop.open(.push) { try $0.connect(endpoint) }
            let onLoop = try await withTaskExecutorPreference(loop) {
                var flags = [loop.queue.wakeup.isLoopThread]
                try await push.send(["x"])
                flags.append(loop.queue.wakeup.isLoopThread)
                _ = try await pull.receive()
                flags.append(loop.queue.wakeup.isLoopThread)
                return flags
            }
            #expect(onLoop == [true, true, true])
            #expect(!loop.queue.wakeup.isLoopThread)
        }
    }

    @Test("a sleep on the loop resumes on its thread, not before its deadline, in deadline order")
    func sleepUntilDeadline() async throws {
        try await withLoop { _, loop in
            let start = ContinuousClock.now
            let order = try await withThrowingTaskGroup(of: Int.self) { group in
                // Queued out of order: each wakes at its own deadline. The deadlines are far
                // enough apart that a task started late on a loaded machine still sleeps before
                // the deadline ahead of it passes (at 0.3 ms and 1.5 ms this flaked under CI load).
                for (index, millis) in [(2, 120), (0, 10), (1, 60)] {
                    group.addTask(executorPreference: loop) {
                        let deadline = start + .milliseconds(millis)
                        try await loop.sleep(until: deadline)
                        #expect(ContinuousClock.now >= deadline)
                        #expect(loop.queue.wakeup.isLoopThread)
                        return index
                    }
                }
                var order: [Int] = []
                for try await index in group { order.append(index) }
                return order
            }
            #expect(order == [0, 1, 2])
            // A deadline already past resumes at once.
            try await loop.sleep(until: start)
        }
    }

    @Test("a sleep with a tolerance ends in the first turn after its deadline, and wakes the loop by its deadline plus the tolerance")
    func sleepWithTolerance() async throws {
        // The loop wakes for the deadline plus the tolerance; a turn past the deadline, for
        // anything, ends the sleep.
        var timers = LoopTimers()
        let start = ContinuousClock.now
        let lenient = LoopTimers.Sleep(deadline: start + .milliseconds(1), tolerance: .milliseconds(50))
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            timers.add(lenient, continuation: continuation)
            #expect(timers.nextDeadline == start + .milliseconds(51))
            timers.fire(now: start + .microseconds(500))
            #expect(timers.nextDeadline == start + .milliseconds(51), "not before its deadline")
            timers.fire(now: start + .milliseconds(2))
        }
        #expect(timers.nextDeadline == nil)

        // On a loop: nothing else turns it, so the sleep ends near its deadline plus the tolerance;
        // a message that turns it after the deadline ends the sleep then.
        try await withLoop { _, loop in
            let (pull, endpoint) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let push = try await loop.open(.push) { try $0.connect(endpoint) }
            let quiet = ContinuousClock.now
            try await withTaskExecutorPreference(loop) {
                try await loop.sleep(until: quiet + .milliseconds(5), tolerance: .milliseconds(40))
            }
            #expect(ContinuousClock.now - quiet >= .milliseconds(45))
            // Timed and sent on the loop's thread: the cooperative pool may be busy for seconds
            // beside other suites (the simulation's), and a clock read there would count that.
            let slept = try await withTaskExecutorPreference(loop) {
                let busy = ContinuousClock.now
                async let sent: Void = {
                    try await Task.sleep(for: .milliseconds(20))
                    try await push.send(["turn"])
                }()
                try await loop.sleep(until: busy + .milliseconds(5), tolerance: .seconds(30))
                let slept = ContinuousClock.now - busy
                try await sent
                return slept
            }
            #expect(slept >= .milliseconds(19) && slept < .seconds(10), "ended in the turn the message caused: \(slept)")
            _ = try await pull.receive()
        }
    }

    @Test("a cancelled sleep throws CancellationError at once; a loop that stops fails its sleepers")
    func sleepCancelledOrStopped() async throws {
        try await withLoop { _, loop in
            let far = ContinuousClock.now + .seconds(600)
            let sleeper = Task(executorPreference: loop) { try await loop.sleep(until: far) }
            try await Task.sleep(for: .milliseconds(20))
            sleeper.cancel()
            let cancelled = try await withTimeout(.seconds(5), "the cancelled sleep") { await sleeper.result }
            #expect(throws: CancellationError.self) { try cancelled.get() }

            let stranded = Task { try await loop.sleep(until: far) }
            try await Task.sleep(for: .milliseconds(20))
            await loop.shutdown()
            let stopped = try await withTimeout(.seconds(5), "the sleep of a stopped loop") { await stranded.result }
            #expect(throws: ZMQError.self) { try stopped.get() }
            await #expect(throws: ZMQError.self) { try await loop.sleep(until: far) }
        }
    }

    @Test("a sleep whose cancel reached the loop first is refused on arrival; a late cancel is harmless")
    func sleepCancelledBeforeItArrives() async throws {
        var timers = LoopTimers()
        let early = LoopTimers.Sleep(deadline: .now + .seconds(600))
        early.markCancelled()
        timers.cancel(early)  // the cancel overtook the sleep: nothing to remove yet
        await #expect(throws: CancellationError.self) {
            try await withUnsafeThrowingContinuation { timers.add(early, continuation: $0) }
        }
        #expect(timers.nextDeadline == nil)

        let due = LoopTimers.Sleep(deadline: .now)
        try await withUnsafeThrowingContinuation { continuation in
            timers.add(due, continuation: continuation)
            timers.fire(now: .now)
        }
        due.markCancelled()
        timers.cancel(due)  // ended already: nothing left behind
        #expect(timers.nextDeadline == nil)
    }
}
