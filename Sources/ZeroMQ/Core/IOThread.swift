import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts detached POSIX threads that we own, outside Swift's cooperative pool.
///
/// Blocking libzmq calls (`zmq_poll`, `zmq_ctx_term`) must never run on a cooperative
/// thread: the pool has one thread per core, so a blocked one stalls unrelated tasks.
package enum IOThread {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Runs `body` on a new detached thread named `name` (truncated to 15 bytes).
    /// - Parameters:
    ///   - name: The thread name shown by `top -H`, `gdb` and `perf`.
    ///   - body: The work to run; the thread ends when it returns.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t?
        #endif
        let rc = pthread_create(&thread, nil, { argument in
            let body = Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue()
            _ = flowkit_zmq_set_thread_name(String(body.name.utf8.prefix(15))!)
            body.run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed with \(rc)")
        #if canImport(Glibc)
        pthread_detach(thread)
        #else
        pthread_detach(thread!)
        #endif
    }
}
