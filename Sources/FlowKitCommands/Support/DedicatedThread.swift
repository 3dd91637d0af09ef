import Foundation

/// Runs blocking work (plain ZeroMQ sockets, a paced sender) on a thread of its own and returns
/// its result, so the cooperative pool is never held by it.
///
/// - Parameters:
///   - name: The thread's name, as profilers and `top -H` show it.
///   - body: The work.
package func onDedicatedThread<T: Sendable>(named name: String, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.name = name
        thread.start()
    }
}
