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
}
