#if canImport(Glibc)
import Glibc
#endif
@testable import FlowKitCluster
import FlowKitCommands
import FlowKitProcesses
import Foundation
import Logging
import Testing

/// The election against a real etcd (Debian's `etcd-server`, a child process on free loopback
/// ports, its data in a temporary directory): the client's calls through the JSON gateway, a
/// leader chosen among three coordinators' elections, takeover when a leader's lease lapses or is
/// given back, fencing when etcd itself is gone.
extension MultiProcessTests {
    @Suite("Election on etcd", .serialized, .timeLimit(.minutes(2)))
    struct ElectionTests {
        static let endpoints = CoordinatorEndpoints(submit: "tcp://127.0.0.1:1", publish: "tcp://127.0.0.1:2", sync: "tcp://127.0.0.1:3")

        func withEtcd(_ body: (EtcdServer, String) async throws -> Void) async throws {
            let directory = try ClusterCommandProcess.makeDirectory()
            let server = try await EtcdServer.start(directory: directory)
            do {
                try await body(server, directory)
            } catch {
                print(server.process.stderrReport())
                await server.process.kill9()
                throw error
            }
            await server.process.kill9()
            try? FileManager.default.removeItem(atPath: directory)
        }

        func election(_ server: EtcdServer, prefix: String) throws -> EtcdElection {
            EtcdElection(client: try EtcdClient(endpoints: [server.clientURL], timeout: .milliseconds(500)), prefix: prefix)
        }

        func coordinator(_ id: String, _ server: EtcdServer, prefix: String) throws -> (CoordinatorElection, Task<Void, Never>) {
            var logger = Logger(label: "election.\(id)")
            logger.logLevel = .warning
            let election = CoordinatorElection(
                settings: .init(id: id, endpoints: Self.endpoints, leaseSeconds: 2),
                election: try election(server, prefix: prefix),
                logger: logger
            )
            return (election, Task { await election.run() })
        }

        func leaders(_ elections: [CoordinatorElection]) -> [LeaderRecord] {
            elections.compactMap { election in
                if case .leading(let record) = election.role, election.mayLead() { record } else { nil }
            }
        }

        @Test func theClientSpeaksEtcdsJSONGateway() async throws {
            try await withEtcd { server, _ in
                let client = try EtcdClient(endpoints: ["http://127.0.0.1:1", server.clientURL])  // the first refuses
                let revision = try await client.put("/t/a", Array("one".utf8))
                #expect(client.current.description == server.clientURL, "the member that answered is the one asked next")
                try await client.put("/t/b", Array("two".utf8))
                let (a, _) = try await client.get("/t/a")
                #expect(a?.value == Array("one".utf8) && a?.createRevision == revision)
                #expect(try await client.get("/t/missing").0 == nil)
                #expect(try await client.get(prefix: "/t/").map(\.key) == ["/t/a", "/t/b"])

                // A transaction runs one branch, atomically, and reports what its gets read.
                let lost = try await client.transaction(when: [.absent("/t/a")], then: [.put("/t/a", [1])], otherwise: [.get("/t/a")])
                #expect(!lost.succeeded && lost.reads.first??.value == Array("one".utf8))
                let won = try await client.transaction(when: [.equal("/t/a", .modRevision(revision))], then: [.put("/t/a", [2]), .get("/t/b")])
                #expect(won.succeeded && won.reads.first??.value == Array("two".utf8))

                // Keys on a lease go with it.
                let lease = try await client.grantLease(ttl: 5)
                try await client.put("/t/leased", [1], lease: lease.id)
                #expect(try await client.keepAlive(lease.id) >= 4)
                try await client.revoke(lease.id)
                #expect(try await client.get("/t/leased").0 == nil)
                await #expect(throws: EtcdError.self) { try await client.keepAlive(lease.id) }
                try await client.revoke(lease.id)  // revoking twice is not an error

                // A watch sees every change after it starts, in order.
                let changes = client.watch("/t/", prefix: true)
                let seen = Task {
                    var events: [EtcdWatchEvent] = []
                    for try await batch in changes {
                        events += batch
                        if events.count >= 2 { break }
                    }
                    return events
                }
                try await Task.sleep(for: .milliseconds(300))
                try await client.put("/t/c", [3])
                _ = try await client.transaction(when: [], then: [.delete("/t/c")])
                let events = try await seen.value
                #expect(events.map(\.kind) == [.put, .delete] && events.allSatisfy { $0.keyValue.key == "/t/c" })
                #expect(client.current.description == server.clientURL)
            }
        }

        /// A member that accepts connections and never answers costs the first request one
        /// timeout; the member that answered takes every request after it, on kept-alive
        /// connections.
        @Test func aSilentMemberIsPassedOverOnceAndTheOneThatAnswersKept() async throws {
            try await withEtcd { server, _ in
                let silent = try SilentListener()
                defer { silent.close() }
                let timeout = Duration.milliseconds(500)
                let client = try EtcdClient(endpoints: ["http://127.0.0.1:\(silent.port)", server.clientURL], timeout: timeout)
                let clock = ContinuousClock()
                let first = try await clock.measure { try await client.put("/s/a", [1]) }
                #expect(first >= timeout, "the silent member had its timeout first")
                #expect(client.current.description == server.clientURL)

                let etcdPort = Int(server.clientURL.split(separator: ":").last ?? "") ?? 0
                let before = Self.tcpConnections(toPort: etcdPort)
                for index in 0..<50 {
                    let took = try await clock.measure { _ = try await client.get("/s/a") }
                    #expect(took < timeout, "request \(index) took \(took): it went to the silent member again")
                }
                let after = Self.tcpConnections(toPort: etcdPort)
                print("etcd client: 50 requests, \(after - before) more sockets connected to etcd")
                #expect(client.current.description == server.clientURL)
                // One connection per request would leave 50 more sockets (in TIME_WAIT) behind.
                #expect(before >= 1, "the first request's connection is still open")
                #expect(after - before < 5, "\(before) connections to etcd before 50 requests, \(after) after")
            }
        }

        /// Sockets on this machine connected (or lately connected) to `port`: lines of
        /// /proc/net/tcp and tcp6 whose remote address has that port. Read to the end: procfs
        /// says its size is 0, and after the multi-process tests the table runs to many pages.
        static func tcpConnections(toPort port: Int) -> Int {
            let table = ["/proc/net/tcp", "/proc/net/tcp6"].map { path in
                let data = (try? FileHandle(forReadingFrom: URL(fileURLWithPath: path)).readToEnd()) ?? nil
                return String(decoding: data ?? Data(), as: UTF8.self)
            }.joined(separator: "\n")
            return table.split(separator: "\n").filter { line in
                let fields = line.split(separator: " ")
                return fields.count > 2 && fields[2].split(separator: ":").last.flatMap { Int($0, radix: 16) } == port
            }.count
        }

        @Test func oneOfThreeLeadsAndTheOthersFollowItsRecord() async throws {
            try await withEtcd { server, _ in
                let started = try ["c1", "c2", "c3"].map { try coordinator($0, server, prefix: "/flowkit/three") }
                let elections = started.map(\.0)
                defer { started.forEach { $0.1.cancel() } }
                let leader = try await eventually("one coordinator leads") { leaders(elections).count == 1 ? leaders(elections)[0] : nil }
                #expect(leader.epoch == 1)
                _ = try await eventually("the others follow it") {
                    elections.filter { $0.role == .standingBy(leader) }.count == 2 ? true : nil
                }
                // The leader renews its lease: it still leads after several lease lengths.
                try await Task.sleep(for: .seconds(5))
                #expect(leaders(elections) == [leader])
            }
        }

        @Test func aLeaderThatDiesIsReplacedOnceItsLeaseLapsesInALargerEpoch() async throws {
            try await withEtcd { server, _ in
                // A leader that wins and dies at once: a lease, a campaign, and no renewal.
                let election = try election(server, prefix: "/flowkit/lapse")
                let lease = try await election.client.grantLease(ttl: 2)
                let dead = LeaderRecord(id: "c1", epoch: 1, endpoints: Self.endpoints)
                guard case .won(let deadEpoch) = try await election.campaign(lease: lease.id, candidate: dead) else {
                    Issue.record("the first campaign lost")
                    return
                }
                let died = ContinuousClock.now
                let started = try ["c2", "c3"].map { try coordinator($0, server, prefix: "/flowkit/lapse") }
                defer { started.forEach { $0.1.cancel() } }
                let elections = started.map(\.0)
                _ = try await eventually("both follow the dead leader", timeout: .seconds(1)) {
                    elections.allSatisfy { $0.role.leader?.id == "c1" } ? true : nil
                }
                let successor = try await eventually("another leads", timeout: .seconds(6)) { leaders(elections).first }
                let takeover = ContinuousClock.now - died
                print("election: a dead leader's lease of 2 s was taken over after \(takeover)")
                #expect(successor.epoch > deadEpoch)
                #expect(takeover < .seconds(4), "takeover took \(takeover)")
                // The seat is not taken twice.
                try await Task.sleep(for: .milliseconds(500))
                #expect(leaders(elections) == [successor])
            }
        }

        @Test func aLeaderThatStopsGivesItsSeatBackAtOnce() async throws {
            try await withEtcd { server, _ in
                let first = try coordinator("c1", server, prefix: "/flowkit/handover")
                let leader = try await eventually("c1 leads") { leaders([first.0]).first }
                let second = try coordinator("c2", server, prefix: "/flowkit/handover")
                defer { second.1.cancel() }
                _ = try await eventually("c2 follows") { second.0.role == .standingBy(leader) ? true : nil }
                let stopped = ContinuousClock.now
                first.1.cancel()
                await first.1.value
                let next = try await eventually("c2 leads", timeout: .seconds(5)) { leaders([second.0]).first }
                let handover = ContinuousClock.now - stopped
                print("election: a stopping leader handed over in \(handover)")
                #expect(next.epoch == leader.epoch + 1)
                // Revoked, not lapsed: well under the 2 s lease.
                #expect(handover < .seconds(1), "handover took \(handover)")
            }
        }

        @Test func withoutEtcdTheLeaderStopsActingWithinItsLeaseAndLeadsAgainWhenEtcdIsBack() async throws {
            try await withEtcd { server, directory in
                let (election, task) = try coordinator("c1", server, prefix: "/flowkit/fence")
                defer { task.cancel() }
                let record = try await eventually("c1 leads") { leaders([election]).first }
                await server.process.kill9()
                let killed = ContinuousClock.now
                _ = try await eventually("c1 stops acting", timeout: .seconds(3)) { election.mayLead() ? nil : true }
                let fenced = ContinuousClock.now - killed
                print("election: etcd killed; the leader stopped acting after \(fenced)")
                #expect(fenced < .seconds(2), "the leader acted \(fenced) after etcd went, past its 2 s lease")
                _ = try await eventually("c1 steps down", timeout: .seconds(1)) { election.role == .seeking ? true : nil }
                // etcd back, with its data: the old lease expires there, and c1 leads again.
                let restarted = try await server.restarted(directory: directory)
                do {
                    let again = try await eventually("c1 leads again", timeout: .seconds(10)) { leaders([election]).first }
                    #expect(again.epoch > record.epoch)
                } catch {
                    await restarted.process.kill9()
                    throw error
                }
                await restarted.process.kill9()
            }
        }
    }
}

/// A TCP port on loopback that accepts connections (the kernel's backlog does) and never answers:
/// an etcd member that hangs.
struct SilentListener {
    let socket: Int32
    let port: Int

    init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && listen(socket, 16) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard listening else {
            Glibc.close(socket)
            throw POSIXError(.EADDRINUSE)
        }
        (self.socket, port) = (socket, Int(UInt16(bigEndian: address.sin_port)))
    }

    func close() { Glibc.close(socket) }
}
