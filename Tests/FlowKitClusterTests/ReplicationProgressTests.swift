@testable import FlowKitCluster
import Testing

@Suite struct ReplicationProgressTests {
    let second: UInt64 = 1_000_000

    func progress(eligible: [String]? = ["c1", "c2", "c3"], written: UInt64 = 10, committed: UInt64 = 10, minInSync: Int = 2) -> ReplicationProgress {
        ReplicationProgress(
            leader: "c1", members: ["c1", "c2", "c3"], eligible: eligible, written: written, committed: committed,
            minInSync: minInSync, lagTimeout: second, now: 0
        )
    }

    @Test func anEntryCommitsOnlyOnceEveryInSyncCoordinatorHoldsIt() {
        var progress = progress()
        var moved = progress.wrote(upTo: 15)
        #expect(!moved && progress.committed == 10)
        moved = progress.fetched(by: "c2", durable: 15, now: 1)
        #expect(!moved)
        moved = progress.fetched(by: "c3", durable: 12, now: 1)
        #expect(moved && progress.committed == 12)
        moved = progress.fetched(by: "c3", durable: 15, now: 2)
        #expect(moved && progress.committed == 15)
        // A standby never counts for more than the leader wrote.
        moved = progress.fetched(by: "c2", durable: 99, now: 3)
        #expect(!moved && progress.committed == 15)
    }

    @Test func theDeposedLeaderLagsFromTheStartAndIsProposedOutAtOnce() {
        var progress = ReplicationProgress(
            leader: "c2", members: ["c1", "c2", "c3"], eligible: ["c1", "c2", "c3"], deposed: "c1", written: 10, committed: 8,
            minInSync: 2, lagTimeout: second, now: 5 * second
        )
        _ = progress.fetched(by: "c3", durable: 10, now: 5 * second + 1)
        // c3 has everything; c1, the old leader, holds back the commit only until the set is written.
        #expect(progress.committed == 8)
        #expect(progress.tick(now: 5 * second + 2) == [.proposeEligible(["c2", "c3"])])
        #expect(progress.eligibleWritten(["c2", "c3"]) && progress.committed == 10)
        // Back and caught up, it is proposed back in.
        _ = progress.fetched(by: "c1", durable: 10, now: 6 * second)
        #expect(progress.tick(now: 6 * second + 1) == [.proposeEligible(["c1", "c2", "c3"])])
    }

    @Test func aLaggingStandbyIsProposedOutAndCommitsGoOnOnceTheServiceHoldsTheNewSet() {
        var progress = progress()
        _ = progress.wrote(upTo: 20)
        _ = progress.fetched(by: "c2", durable: 20, now: 1)
        // c3 never fetches: within the lag timeout it stays, and holds up the commit.
        var actions = progress.tick(now: second)
        #expect(actions == [] && progress.committed == 10)
        _ = progress.fetched(by: "c2", durable: 20, now: second + 2)
        actions = progress.tick(now: second + 2)
        #expect(actions == [.proposeEligible(["c1", "c2"])])
        // While the write is out, the old set still counts: nothing commits without c3.
        #expect(progress.required == ["c1", "c2", "c3"])
        actions = progress.tick(now: second + 3)
        #expect(actions == [] && progress.committed == 10)
        let moved = progress.eligibleWritten(["c1", "c2"])
        #expect(moved && progress.committed == 20)
    }

    @Test func aStandbyThatCaughtUpIsProposedBackAndCountsFromTheProposal() {
        var progress = progress(eligible: ["c1", "c2"])
        _ = progress.wrote(upTo: 20)
        _ = progress.fetched(by: "c2", durable: 20, now: 1)
        #expect(progress.committed == 20)
        // c3 holds everything committed: proposed back in.
        _ = progress.fetched(by: "c3", durable: 20, now: 2)
        let actions = progress.tick(now: 3)
        #expect(actions == [.proposeEligible(["c1", "c2", "c3"])])
        // From the proposal on, c3 must hold what commits: it may be leading next.
        _ = progress.wrote(upTo: 25)
        _ = progress.fetched(by: "c2", durable: 25, now: 4)
        #expect(progress.committed == 20)
        _ = progress.fetched(by: "c3", durable: 25, now: 5)
        #expect(progress.committed == 25)
        let moved = progress.eligibleWritten(["c1", "c2", "c3"])
        #expect(!moved)
    }

    @Test func aFailedWriteLeavesTheOldSetStandingAndIsProposedAgain() {
        var progress = progress()
        _ = progress.wrote(upTo: 20)
        _ = progress.fetched(by: "c2", durable: 20, now: 1)
        var actions = progress.tick(now: 2 * second)
        #expect(actions == [.proposeEligible(["c1", "c2"])])
        progress.eligibleWriteFailed()
        #expect(progress.eligible == ["c1", "c2", "c3"] && progress.committed == 10)
        actions = progress.tick(now: 2 * second + 1)
        #expect(actions == [.proposeEligible(["c1", "c2"])])
    }

    @Test func belowTheMinimumNothingCommits() {
        var progress = progress(eligible: ["c1"], minInSync: 2)
        #expect(progress.isBelowMinimum)
        var moved = progress.wrote(upTo: 20)
        #expect(!moved && progress.committed == 10)
        // c2 catches up and is proposed in; once written, commits resume with it.
        _ = progress.fetched(by: "c2", durable: 20, now: 1)
        let actions = progress.tick(now: 2)
        #expect(actions == [.proposeEligible(["c1", "c2"])])
        moved = progress.eligibleWritten(["c1", "c2"])
        #expect(moved && progress.committed == 20)
    }

    @Test func theFirstLeaderWritesTheSetWhenTheServiceHasNone() {
        var progress = progress(eligible: nil)
        #expect(progress.required == ["c1", "c2", "c3"])
        var actions = progress.tick(now: 1)
        #expect(actions == [.proposeEligible(["c1", "c2", "c3"])])
        progress.eligibleWriteFailed()
        actions = progress.tick(now: 2)
        #expect(actions == [.proposeEligible(["c1", "c2", "c3"])])
        _ = progress.eligibleWritten(["c1", "c2", "c3"])
        actions = progress.tick(now: 3)
        #expect(actions == [])
    }

    @Test func theSetNeverShrinksBelowTheMinimumAndTheSilentGoFirst() {
        var progress = progress()
        _ = progress.wrote(upTo: 20)
        // Both standbys lag; c2 at least fetches, c3 is silent: only c3 goes.
        _ = progress.fetched(by: "c2", durable: 12, now: 5)
        let actions = progress.tick(now: 2 * second)
        #expect(actions == [.proposeEligible(["c1", "c2"])])
        _ = progress.eligibleWritten(["c1", "c2"])
        // c2 lags on, but the set is at the minimum: it stays, and the commit waits for it.
        let later = progress.tick(now: 10 * second)
        #expect(later == [] && progress.eligible == ["c1", "c2"] && progress.committed == 12)
    }

    @Test func theStatusShowsEveryCopyAndWhatHoldsCommitsBack() {
        var progress = progress()
        _ = progress.wrote(upTo: 20)
        _ = progress.fetched(by: "c2", durable: 20, now: 2_000)
        let status = progress.status(leaderSince: 5_000_000, now: 6_000)
        #expect(status.leader == "c1" && status.leaderSince == 5_000 && status.written == 20 && status.minInSync == 2)
        #expect(status.coordinators.map(\.id) == ["c1", "c2", "c3"])
        #expect(status.coordinators[1] == .init(id: "c2", role: "standby", inSync: true, durable: 20, lag: 0, lastFetchMillis: 4))
        #expect(status.coordinators[2] == .init(id: "c3", role: "standby", inSync: true, durable: 0, lag: 20, lastFetchMillis: nil))
        #expect(status.problems.isEmpty)
        // c3 lags past the timeout: proposed out, nothing blocks.
        #expect(progress.blocking(now: 2 * second).isEmpty)
        _ = progress.tick(now: 2 * second)
        _ = progress.eligibleWritten(["c1", "c2"])
        let degraded = progress.status(leaderSince: 0, now: 2 * second)
        #expect(degraded.problems == ["coordinator c3 is not in sync: 20 entries behind the leader c1 (no fetch from it this term)"])
        // Now c2 stops too: the set is at its minimum, so c2 blocks every commit.
        _ = progress.fetched(by: "c2", durable: 20, now: 2 * second)
        _ = progress.wrote(upTo: 25)
        #expect(progress.blocking(now: 2 * second + 1).isEmpty, "within the lag timeout")
        #expect(progress.blocking(now: 4 * second) == ["c2"])
    }

    @Test func tooFewInSyncIsAProblem() {
        let status = ReplicationStatus(
            leader: "c1", leaderSince: 0, written: 5, minInSync: 2,
            coordinators: [.init(id: "c1", role: "leader", inSync: true, durable: 5, lag: 0, lastFetchMillis: nil)]
        )
        #expect(status.problems == ["only 1 coordinator(s) in sync, 2 needed: nothing commits"])
        // In an idle cluster a dead standby is not behind: its silence is the problem.
        let idle = ReplicationStatus(
            leader: "c1", leaderSince: 0, written: 5, minInSync: 2,
            coordinators: [
                .init(id: "c1", role: "leader", inSync: true, durable: 5, lag: 0, lastFetchMillis: nil),
                .init(id: "c2", role: "standby", inSync: true, durable: 5, lag: 0, lastFetchMillis: 200),
                .init(id: "c3", role: "standby", inSync: true, durable: 5, lag: 0, lastFetchMillis: 9_000),
            ]
        )
        #expect(idle.problems == ["coordinator c3 has not fetched from the leader for 9000 ms"])
    }
}
