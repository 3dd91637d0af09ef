@testable import FlowKitCluster
import Testing

@Suite struct CoordinatorLinkTests {
    let second: UInt64 = 1_000_000

    func link(joinsThroughSnapshot: Bool = true) -> CoordinatorLink {
        CoordinatorLink(timeout: .seconds(2), joinsThroughSnapshot: joinsThroughSnapshot)
    }

    @Test func theFirstWelcomeBeginsATermAndAnEmptyNodeJoinsThroughASnapshot() {
        var link = link()
        #expect(!link.isConnected(now: 0))
        let actions = link.welcome(epoch: 7, head: 100, applied: 0, isJoining: false, now: 10)
        #expect(actions == [.newTerm(7, previous: 0), .reconnect, .joinThroughSnapshot])
        #expect(link.epoch == 7 && link.isConnected(now: 10))
        // A second welcome in the same term (a HELLO answered again) only notes the head.
        #expect(link.welcome(epoch: 7, head: 120, applied: 0, isJoining: false, now: 20) == [.noteHead(120)])
    }

    @Test func aNodeThatHasStateOrMayNotUseSnapshotsFollowsTheHead() {
        var behind = link()
        #expect(behind.welcome(epoch: 1, head: 100, applied: 40, isJoining: false, now: 1).last == .noteHead(100))
        var noSnapshots = link(joinsThroughSnapshot: false)
        #expect(noSnapshots.welcome(epoch: 1, head: 100, applied: 0, isJoining: false, now: 1).last == .noteHead(100))
        var emptyCluster = link()
        #expect(emptyCluster.welcome(epoch: 1, head: 0, applied: 0, isJoining: false, now: 1).last == .noteHead(0))
    }

    @Test func aHeartbeatAfterSilenceReconnectsAndANewTermToo() {
        var link = link()
        _ = link.welcome(epoch: 1, head: 5, applied: 5, isJoining: false, now: 1)
        #expect(link.heartbeat(epoch: 1, head: 6, applied: 5, now: second) == [.noteHead(6)])
        // Silent for longer than the timeout: the coordinator may have lost this node's HELLO.
        #expect(!link.isConnected(now: 4 * second))
        #expect(link.heartbeat(epoch: 1, head: 7, applied: 6, now: 4 * second) == [.reconnect, .noteHead(7)])
        // A restarted coordinator with its log intact: a new term, hello and resend.
        #expect(link.heartbeat(epoch: 2, head: 7, applied: 7, now: 5 * second) == [.newTerm(2, previous: 1), .reconnect, .noteHead(7)])
    }

    @Test func aNewTermWhoseLogEndsBeforeWhatWasAppliedRejoins() {
        var link = link()
        _ = link.welcome(epoch: 1, head: 50, applied: 50, isJoining: false, now: 1)
        #expect(link.heartbeat(epoch: 2, head: 10, applied: 50, now: second) == [.newTerm(2, previous: 1), .rejoin(head: 10), .reconnect, .noteHead(10)])
    }

    @Test func onlyAnAckThatOrderedSomethingTellsOfANewTerm() {
        var link = link()
        _ = link.welcome(epoch: 3, head: 9, applied: 9, isJoining: false, now: 1)
        // Duplicates may name the older term that ordered them.
        #expect(link.ack(epoch: 2, head: 9, duplicatesOnly: true, applied: 9) == [.noteAnnouncedHead(9)])
        #expect(link.epoch == 3)
        #expect(link.ack(epoch: 4, head: 10, duplicatesOnly: false, applied: 9) == [.newTerm(4, previous: 3), .reconnect, .noteAnnouncedHead(10)])
    }

    @Test func aSilentCoordinatorIsGreetedAgainEveryFewTimeouts() {
        var link = link()
        _ = link.welcome(epoch: 1, head: 0, applied: 0, isJoining: false, now: 1)
        #expect(link.tick(now: 3 * second).isEmpty, "disconnected, but not yet four timeouts")
        #expect(link.tick(now: 8 * second + 2) == [.helloAgain])
        #expect(link.tick(now: 9 * second).isEmpty)
        #expect(link.tick(now: 14 * second + 3) == [.helloAgain], "three timeouts later")
        // A node that never heard from its coordinator greets it as soon as it ticks.
        var never = self.link()
        #expect(never.tick(now: 9 * second) == [.helloAgain])
    }

    /// Found by the simulation (seed 70): a node first hears of a new term from a message whose
    /// head is older than entries of that term it already applied (an ACK or heartbeat overtaken
    /// by ENTRIES on the publish socket). Nothing was lost: it must not drop its state.
    @Test func aStaleHeadInANewTermIsNoLossWhenTheNodeAppliedThatTermsEntries() {
        var link = link()
        _ = link.welcome(epoch: 1, head: 50, applied: 50, isJoining: false, now: 1)
        link.applied(epoch: 2)
        #expect(link.heartbeat(epoch: 2, head: 48, applied: 60, now: second) == [.newTerm(2, previous: 1), .reconnect, .noteHead(48)])
        var lost = self.link()
        _ = lost.welcome(epoch: 1, head: 50, applied: 50, isJoining: false, now: 1)
        lost.applied(epoch: 1)
        #expect(lost.heartbeat(epoch: 2, head: 48, applied: 60, now: second).contains(.rejoin(head: 48)))
    }

    @Test func aNewLeadersLowerHeadIsNoLossAmongReplicatedCoordinators() {
        var link = CoordinatorLink(timeout: .seconds(2), joinsThroughSnapshot: true, headMayLag: true)
        _ = link.welcome(epoch: 3, head: 100, applied: 100, isJoining: false, now: 1)
        // The new leader's commit point has not caught up with what this node applied yet.
        #expect(link.heartbeat(epoch: 4, head: 95, applied: 100, now: 2) == [.newTerm(4, previous: 3), .reconnect, .noteHead(95)])
    }
}
