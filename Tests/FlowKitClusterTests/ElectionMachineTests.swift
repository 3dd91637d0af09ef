@testable import FlowKitCluster
import Testing

@Suite struct ElectionMachineTests {
    let second: UInt64 = 1_000_000
    let endpoints = CoordinatorEndpoints(submit: "tcp://127.0.0.1:1", publish: "tcp://127.0.0.1:2", sync: "tcp://127.0.0.1:3")

    func machine(_ id: String = "c1") -> ElectionMachine {
        ElectionMachine(settings: .init(id: id, endpoints: endpoints, leaseSeconds: 2))
    }

    func record(_ id: String, epoch: UInt32) -> LeaderRecord {
        LeaderRecord(id: id, epoch: epoch, endpoints: endpoints)
    }

    /// A machine that won epoch 5 under lease 9, asked for at time 0.
    func leader() -> ElectionMachine {
        var machine = machine()
        _ = machine.start(now: 0)
        _ = machine.granted(lease: 9, seconds: 2, askedAt: 0, now: 1_000)
        _ = machine.campaigned(.won(epoch: 5), now: 2_000)
        return machine
    }

    @Test func aCoordinatorAsksForALeaseThenCampaignsUnderIt() {
        var machine = machine()
        #expect(machine.start(now: 0) == [.request(.grantLease)])
        // Asked once, even if time passes before the answer.
        #expect(machine.tick(now: 50_000) == [])
        let candidate = record("c1", epoch: 1)
        #expect(machine.granted(lease: 9, seconds: 2, askedAt: 0, now: 1_000) == [.request(.campaign(lease: 9, candidate: candidate))])
        #expect(!machine.mayLead(now: 2_000))
        #expect(machine.campaigned(.won(epoch: 5), now: 2_000) == [.role(.leading(record("c1", epoch: 5)))])
        #expect(machine.mayLead(now: 2_000))
    }

    @Test func aLeaderStopsActingBeforeItsLeaseCanExpireEvenIfItHearsNothing() {
        var machine = leader()
        // The lease was asked for at 0 and lives 2 s: the leader acts until 2 s less the safety margin.
        let safety = machine.settings.safety
        #expect(machine.mayLead(now: 2 * second - safety - 1))
        #expect(!machine.mayLead(now: 2 * second - safety))
        // A leader stopped (SIGSTOP) past its deadline steps down at its first tick, and starts over.
        #expect(machine.tick(now: 3 * second) == [.role(.seeking), .request(.grantLease)])
        #expect(!machine.mayLead(now: 3 * second))
    }

    /// Found by the simulation (seed 73 with 3 coordinators): a view read before the campaign and
    /// delivered after its win deposed the new leader, which then saw its own record and waited
    /// for it to go while renewing the lease that kept it: no one led again.
    @Test func itsOwnRecordOnItsLeaseWhileNotLeadingIsGivenBack() {
        var machine = leader()
        let mine = record("c1", epoch: 5)
        // The stale view (no leader yet) ends the term: safe, it acts on nothing. It campaigns again.
        #expect(machine.observed(leader: nil, eligible: true, now: 3_000) == [.role(.seeking), .request(.campaign(lease: 9, candidate: record("c1", epoch: 1)))])
        // It loses to its own record: it gives the lease back and asks for a new one.
        #expect(machine.campaigned(.lost(leader: mine), now: 4_000) == [.request(.revokeLease(9)), .request(.grantLease)])
        // The record went with the lease.
        #expect(machine.observed(leader: nil, eligible: true, now: 5_000) == [])
        #expect(machine.granted(lease: 10, seconds: 2, askedAt: 4_000, now: 6_000) == [.request(.campaign(lease: 10, candidate: record("c1", epoch: 1)))])
    }

    @Test func aRenewalExtendsTheLeaseFromWhenItWasAsked() {
        var machine = leader()
        let renewAt = machine.settings.renewEvery + 1_000
        #expect(machine.tick(now: renewAt) == [.request(.renewLease(9))])
        #expect(machine.tick(now: renewAt + 1_000) == [])  // one renewal in flight
        // The answer comes late: the lease counts from the request, not the answer.
        _ = machine.renewed(seconds: 2, askedAt: renewAt, now: renewAt + second)
        #expect(machine.mayLead(now: renewAt + 2 * second - machine.settings.safety - 1))
        #expect(!machine.mayLead(now: renewAt + 2 * second - machine.settings.safety))
    }

    @Test func aLostLeaseEndsTheTermAtOnce() {
        var machine = leader()
        #expect(machine.leaseLost(now: 10_000) == [.role(.seeking), .request(.grantLease)])
        #expect(!machine.mayLead(now: 10_000))
    }

    @Test func anotherLeaderInTheServiceDeposesThisOne() {
        var machine = leader()
        let other = record("c2", epoch: 6)
        #expect(machine.observed(leader: other, eligible: true, now: 10_000) == [.role(.standingBy(other))])
        #expect(!machine.mayLead(now: 10_000))
        // Its own record, seen again, changes nothing while it leads.
        var still = leader()
        #expect(still.observed(leader: record("c1", epoch: 5), eligible: true, now: 10_000) == [])
        #expect(still.mayLead(now: 10_000))
    }

    @Test func aStandbyCampaignsOnlyOnceTheSeatIsEmptyAndOnlyIfEligible() {
        var machine = machine("c2")
        _ = machine.start(now: 0)
        let leader = record("c1", epoch: 3)
        #expect(machine.observed(leader: leader, eligible: true, now: 10) == [.role(.standingBy(leader))])
        // Holding a lease changes nothing while someone leads.
        #expect(machine.granted(lease: 4, seconds: 2, askedAt: 0, now: 20) == [])
        // The leader's lease expired: campaign.
        let candidate = LeaderRecord(id: "c2", epoch: 1, endpoints: endpoints)
        #expect(machine.observed(leader: nil, eligible: true, now: 30) == [.role(.seeking), .request(.campaign(lease: 4, candidate: candidate))])

        var behind = self.machine("c3")
        _ = behind.start(now: 0)
        _ = behind.granted(lease: 5, seconds: 2, askedAt: 0, now: 1)
        _ = behind.campaigned(.lost(leader: leader), now: 2)
        // Not in sync with the log: it waits, whoever leads.
        #expect(behind.observed(leader: nil, eligible: false, now: 30) == [.role(.seeking)])
        #expect(behind.tick(now: 40) == [])
        #expect(behind.observed(leader: nil, eligible: true, now: 50).contains(.request(.campaign(lease: 5, candidate: LeaderRecord(id: "c3", epoch: 1, endpoints: endpoints)))))
    }

    @Test func itsOwnRecordFromAnEarlierLeaseIsWaitedOut() {
        // Restarted within the old lease: the service still names it, under a lease it lost.
        var machine = machine()
        _ = machine.start(now: 0)
        _ = machine.granted(lease: 7, seconds: 2, askedAt: 0, now: 1)
        #expect(machine.campaigned(.lost(leader: record("c1", epoch: 4)), now: 2) == [])
        #expect(machine.role == .seeking && machine.tick(now: 50_000).isEmpty)
        #expect(machine.observed(leader: nil, eligible: true, now: 2 * second).count == 1)
    }

    @Test func theCandidateAsksForAnEpochAboveItsLog() {
        var machine = machine()
        machine.minimumEpoch = 42
        _ = machine.start(now: 0)
        #expect(machine.granted(lease: 1, seconds: 2, askedAt: 0, now: 1) == [.request(.campaign(lease: 1, candidate: record("c1", epoch: 42)))])
    }

    @Test func aFailedRequestIsAskedAgainAfterAPause() {
        var machine = machine()
        _ = machine.start(now: 0)
        #expect(machine.requestFailed(.grantLease, now: 1_000) == [])
        #expect(machine.tick(now: 1_000 + machine.settings.retryEvery - 1) == [])
        #expect(machine.tick(now: 1_000 + machine.settings.retryEvery) == [.request(.grantLease)])
    }

    @Test func aCampaignWonAfterTheLeaseRanOutIsNotActedOn() {
        var machine = machine()
        _ = machine.start(now: 0)
        _ = machine.granted(lease: 9, seconds: 2, askedAt: 0, now: 1)
        #expect(machine.campaigned(.won(epoch: 2), now: 2 * second) == [])
        #expect(!machine.mayLead(now: 2 * second))
    }

    @Test func stoppingGivesTheLeaseBack() {
        var machine = leader()
        #expect(machine.stop() == [.role(.seeking), .request(.revokeLease(9))])
        #expect(machine.tick(now: 10 * second) == [])
        #expect(machine.granted(lease: 10, seconds: 2, askedAt: 0, now: 1) == [.request(.revokeLease(10))])
    }
}
