#if os(Linux)
import Glibc
import Testing
@testable import ZeroMQ

/// The I/O loop's epoll-backed wait, held to `poll`'s answers on real descriptors (socket pairs).
@Suite("Readiness set (epoll with poll's semantics)")
struct ReadinessSetTests {
    /// A connected pair of Unix stream sockets, closed at the end of the test.
    final class Pair {
        let left: Int32
        let right: Int32
        private var open: Set<Int32>

        init() throws {
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw Failure("socketpair: errno \(errno)") }
            left = fds[0]
            right = fds[1]
            open = [left, right]
        }

        func send(_ byte: UInt8 = 1, from fd: Int32) {
            var byte = byte
            _ = write(fd, &byte, 1)
        }

        func close(_ fd: Int32) {
            guard open.remove(fd) != nil else { return }
            _ = Glibc.close(fd)
        }

        deinit { for fd in open { _ = Glibc.close(fd) } }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    struct Entry {
        var fd: Int32
        var events: Int32
        var token: UInt32
    }

    /// One wait; returns its result and each entry's `revents`.
    static func wait(_ set: ReadinessSet, _ entries: [Entry], timeout: Int32) -> (Int32, [Int16]) {
        var pollSet = entries.map { pollfd(fd: $0.fd, events: Int16($0.events), revents: 0) }
        let result = set.wait(&pollSet, tokens: entries.map(\.token), timeoutMilliseconds: timeout)
        return (result, pollSet.map(\.revents))
    }

    @Test("reports what is readable and writable, and nothing else, like poll")
    func readableAndWritable() throws {
        let set = try #require(ReadinessSet())
        let first = try Pair()
        let second = try Pair()
        let (a, b) = (PollToken.next(), PollToken.next())
        // Nothing to read: a short wait times out.
        var (result, revents) = Self.wait(set, [Entry(fd: first.left, events: POLLIN, token: a), Entry(fd: second.left, events: POLLIN, token: b)], timeout: 20)
        #expect(result == 0)
        #expect(revents == [0, 0])
        second.send(from: second.right)
        (result, revents) = Self.wait(set, [Entry(fd: first.left, events: POLLIN, token: a), Entry(fd: second.left, events: POLLIN, token: b)], timeout: 1_000)
        #expect(result == 1)
        #expect(revents == [0, Int16(POLLIN)])
        // Level-triggered: still readable until read.
        (result, revents) = Self.wait(set, [Entry(fd: first.left, events: POLLIN, token: a), Entry(fd: second.left, events: POLLIN | POLLOUT, token: b)], timeout: 1_000)
        #expect(result == 1)
        #expect(revents == [0, Int16(POLLIN | POLLOUT)])
        // POLLOUT no longer asked for: only what is asked is reported.
        (result, revents) = Self.wait(set, [Entry(fd: first.left, events: POLLOUT, token: a), Entry(fd: second.left, events: 0, token: b)], timeout: 1_000)
        #expect(result == 1)
        #expect(revents == [Int16(POLLOUT), 0])
    }

    @Test("a descriptor left out of the set is no longer reported")
    func leftOut() throws {
        let set = try #require(ReadinessSet())
        let pair = try Pair()
        let other = try Pair()
        let token = PollToken.next()
        pair.send(from: pair.right)
        var (result, _) = Self.wait(set, [Entry(fd: pair.left, events: POLLIN, token: token)], timeout: 1_000)
        #expect(result == 1)
        // Still readable, but not in this turn's set.
        (result, _) = Self.wait(set, [Entry(fd: other.left, events: POLLIN, token: PollToken.next())], timeout: 20)
        #expect(result == 0)
    }

    @Test("a descriptor number closed and reused by another file is watched afresh")
    func reusedNumber() throws {
        let set = try #require(ReadinessSet())
        let old = try Pair()
        var (result, _) = Self.wait(set, [Entry(fd: old.left, events: POLLIN, token: PollToken.next())], timeout: 20)
        #expect(result == 0)
        // Put another file under the same number (dup2 closes the old one, atomically, so no
        // test running alongside can take the number in between).
        let new = try Pair()
        try #require(dup2(new.left, old.left) == old.left)
        new.send(from: new.right)
        // The same number and events as before, a new token: it must be registered again, or the
        // wait would sleep through the new file's data.
        (result, _) = Self.wait(set, [Entry(fd: old.left, events: POLLIN, token: PollToken.next())], timeout: 1_000)
        #expect(result == 1)
    }

    @Test("a closed descriptor is reported invalid at once, as poll does")
    func closedDescriptor() throws {
        let set = try #require(ReadinessSet())
        // A number no test running alongside can be given: the kernel hands out the lowest free
        // number, so the closed descriptor sits just under the process's limit (a closed low
        // number could be reused by another test's socket before the wait, which then sleeps).
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let fd = Int32(min(limit.rlim_cur, 65_536)) - 1
        let pair = try Pair()
        try #require(fcntl(fd, F_GETFD) == -1, "descriptor \(fd) is open")
        try #require(dup2(pair.left, fd) == fd)
        _ = Glibc.close(fd)
        let clock = ContinuousClock()
        let start = clock.now
        let (result, revents) = Self.wait(set, [Entry(fd: fd, events: POLLIN, token: PollToken.next())], timeout: 5_000)
        #expect(result == 1)
        #expect(revents == [Int16(POLLNVAL)])
        #expect(clock.now - start < .seconds(4))
    }

    @Test("the same descriptor twice in a set gets its events in both entries")
    func sharedDescriptor() throws {
        let set = try #require(ReadinessSet())
        let pair = try Pair()
        let token = PollToken.next()
        pair.send(from: pair.right)
        let (result, revents) = Self.wait(
            set, [Entry(fd: pair.left, events: POLLIN, token: token), Entry(fd: pair.left, events: POLLOUT, token: token)], timeout: 1_000
        )
        #expect(result == 2)
        #expect(revents == [Int16(POLLIN), Int16(POLLOUT)])
    }
}
#endif
