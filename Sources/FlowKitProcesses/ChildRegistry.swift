#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// The process groups of children not yet reaped, for the exit handler and leftover checks.
package enum ChildRegistry {
    static let groups = Mutex<Set<pid_t>>([])
    private static let installed = Mutex(false)

    static func installExitHandler() {
        let first = installed.withLock { installed in
            defer { installed = true }
            return !installed
        }
        guard first else { return }
        atexit {
            ChildRegistry.groups.withLock { groups in
                for group in groups { _ = kill(-group, SIGKILL) }
            }
        }
    }

    /// The running processes, from `/proc`, in any of `groups`: what a test or command whose children led
    /// those groups leaves behind. Processes of others (other groups) are not its business, so
    /// tests may run side by side.
    package static func processes(inGroups groups: Set<pid_t>) -> [String] {
        guard !groups.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [String] = []
        for entry in entries where entry.allSatisfy(\.isNumber) {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            let command = stat[stat.index(after: open)..<close]
            // After the command: state, parent, process group.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, let group = Int32(fields[2]), groups.contains(group) else { continue }
            // A zombie has exited: nothing runs, and its parent (init, for a grandchild whose
            // parent went first, as Chromium's helpers) reaps it when it gets to it.
            guard fields[0] != "Z" else { continue }
            found.append("\(entry) \(command) state \(fields[0])")
        }
        return found
    }
}

/// The process groups the children of one scope lead: bound with
/// `SpawnedGroups.$current.withValue(…)`, filled by ``ChildProcess/spawn(executable:arguments:name:directory:stderrPath:appendingStderr:environment:inheritingFlowKitVariables:namespace:whenParentDies:)``.
package final class SpawnedGroups: Sendable {
    @TaskLocal package static var current: SpawnedGroups?

    private let groups = Mutex<Set<pid_t>>([])

    package init() {}

    func add(_ group: pid_t) { groups.withLock { _ = $0.insert(group) } }

    /// What is still running, or not yet reaped, of what was started in this scope.
    package var leftovers: [String] { ChildRegistry.processes(inGroups: groups.withLock { $0 }) }
}

/// Runs closures on one thread that lives as long as the process (see ``ChildProcess``).
final class SpawnThread: @unchecked Sendable {
    static let shared = SpawnThread()
    // Guards `jobs`.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = "flowkit-spawner"
        thread.start()
    }

    /// Runs `body` on the spawning thread and waits for it (a `posix_spawn` takes well under a
    /// millisecond, so the caller's thread is not held long).
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        condition.lock()
        jobs.append {
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        condition.signal()
        condition.unlock()
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
