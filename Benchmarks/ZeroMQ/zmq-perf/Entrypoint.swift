// zmq-perf: the zmq-c-baseline measurements, run through the Swift ZeroMQ module.
//
//   zmq-perf thr MODE COUNT SIZE [PEER]   SUB here (binds) <- XPUB child (connects)
//   zmq-perf lat MODE COUNT SIZE [PEER]   REQ here (binds) <-> REP echo child
//
// `sync` uses `Socket` directly on one thread; `async` uses `IOLoop` + `AsyncSocket`
// on both sides (batch receive through `incoming`, batch send through `send(contentsOf:)`)
// with the application on the cooperative pool; `loop` is the same code run on the loop
// thread through `withTaskExecutorPreference`. PEER is the child's mode (default: MODE).
// Children are this executable started again with posix_spawn, as in the C baseline.

import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif

enum Mode: String {
    /// `Socket` on the calling thread.
    case sync
    /// `IOLoop` + `AsyncSocket`, with the application task on Swift's cooperative pool.
    case async
    /// `IOLoop` + `AsyncSocket`, with the application task on the loop thread
    /// (`withTaskExecutorPreference(loop)`): no thread hop between I/O and handler.
    case loop
}

/// Runs `body` on the loop's thread when `mode` is `.loop`, else on the cooperative pool.
func run<T: Sendable>(_ mode: Mode, on loop: IOLoop, _ body: () async throws -> T) async throws -> T {
    if mode == .loop {
        return try await withTaskExecutorPreference(loop) { try await body() }
    }
    return try await body()
}

@main
struct Entrypoint {
    static func main() async throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        func mode(_ text: String) -> Mode {
            guard let mode = Mode(rawValue: text) else { usage() }
            return mode
        }
        switch (arguments.first ?? "", arguments.count) {
        case ("thr", 4), ("thr", 5):
            // The publisher (peer) uses the subscriber's mode unless a fifth argument says otherwise.
            let peer = arguments.count == 5 ? mode(arguments[4]) : mode(arguments[1])
            try await Throughput.subscriber(mode: mode(arguments[1]), peer: peer, count: Int(arguments[2])!, size: Int(arguments[3])!)
        case ("lat", 4), ("lat", 5):
            let peer = arguments.count == 5 ? mode(arguments[4]) : mode(arguments[1])
            try await Latency.requester(mode: mode(arguments[1]), peer: peer, count: Int(arguments[2])!, size: Int(arguments[3])!)
        case ("pub-child", 5):
            try await Throughput.publisher(mode: mode(arguments[1]), endpoint: arguments[2], count: Int(arguments[3])!, size: Int(arguments[4])!)
        case ("rep-child", 4):
            try await Latency.echo(mode: mode(arguments[1]), endpoint: arguments[2], count: Int(arguments[3])!)
        default:
            usage()
        }
    }

    static func usage() -> Never {
        print("usage: zmq-perf thr|lat sync|async|loop COUNT SIZE [PEER-MODE]")
        exit(2)
    }
}

/// Starts this executable again with `arguments` (like the C baseline's posix_spawn).
func spawnSelf(_ arguments: [String]) -> pid_t {
    var path = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &path, path.count - 1)
    precondition(length > 0, "readlink /proc/self/exe failed")
    let executable = String(decoding: path[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, nil, nil, argv, environ)
    precondition(rc == 0, "posix_spawn failed: \(rc)")
    return pid
}

func waitForChild(_ pid: pid_t) {
    var status: Int32 = 0
    waitpid(pid, &status, 0)
}

/// The same high-water mark as the C baseline.
let highWaterMark: Int32 = 100_000


/// CPU time (user + system) of this process so far, children excluded.
func cpuTime() -> Duration {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let micros = Int64(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + Int64(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    return .microseconds(micros)
}

extension Duration {
    var nanoseconds: Double {
        Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
    }
}
