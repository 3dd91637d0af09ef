@_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct CoordinatorChoiceTests {
    let second: UInt64 = 1_000_000
    let c1 = CoordinatorEndpoints(submit: "tcp://a:1", publish: "tcp://a:2", sync: "tcp://a:3")
    let c2 = CoordinatorEndpoints(submit: "tcp://b:1", publish: "tcp://b:2", sync: "tcp://b:3")
    let c3 = CoordinatorEndpoints(submit: "tcp://c:1", publish: "tcp://c:2", sync: "tcp://c:3")

    @Test func oneCoordinatorIsNeverLeft() {
        var choice = CoordinatorChoice(coordinator: c1, others: [], timeout: .seconds(1))
        choice.greeted(now: 0)
        #expect(choice.tick(now: 10 * second) == nil && choice.current == c1)
    }

    @Test func aSilentCoordinatorIsLeftForTheNextAndNotLeaderNamesTheLeader() {
        var choice = CoordinatorChoice(coordinator: c1, others: [c2, c3, c1], timeout: .seconds(1))
        #expect(choice.coordinators == [c1, c2, c3])
        // Answered in time: it stays.
        choice.submitted(now: 0)
        choice.answered()
        #expect(choice.tick(now: 5 * second) == nil)
        // A SUBMIT unanswered for the timeout: probed with a HELLO first (a live leader whose
        // commits wait answers that at once).
        choice.submitted(now: 5 * second)
        #expect(choice.tick(now: 6 * second - 1) == nil)
        #expect(choice.tick(now: 6 * second) == .probe)
        choice.greeted(now: 6 * second)
        choice.answered()
        #expect(choice.tick(now: 8 * second) == nil && choice.current == c1)
        // A HELLO unanswered for the timeout: the next one.
        choice.greeted(now: 8 * second)
        #expect(choice.tick(now: 9 * second) == .switchTo(c2) && choice.currentIndex == 1)
        // c2 stands by and names c3: the node goes there at once.
        #expect(choice.redirected(NotLeaderMessage(epoch: 4, id: "c3", endpoints: c3), by: 1, now: 6 * second) == c3)
        // No leader known yet, or one the node was not told of: it stays.
        #expect(choice.redirected(NotLeaderMessage(epoch: 0, id: "", endpoints: CoordinatorEndpoints(submit: "", publish: "", sync: "")), by: 2, now: 7 * second) == nil)
        let stranger = CoordinatorEndpoints(submit: "tcp://x:1", publish: "tcp://x:2", sync: "tcp://x:3")
        #expect(choice.redirected(NotLeaderMessage(epoch: 4, id: "c9", endpoints: stranger), by: 2, now: 7 * second) == nil)
        #expect(choice.current == c3)
    }

    @Test func aWelcomeOnAnotherCoordinatorsSocketMakesItCurrent() {
        var choice = CoordinatorChoice(coordinator: c1, others: [c2, c3], timeout: .seconds(1))
        // Greeted everyone after a new term's heartbeat; c1 (dead) stays silent.
        choice.greeted(now: 0)
        // c3 names c2 on its own socket: the node goes to c2; c1's wait is not c3's to clear.
        #expect(choice.redirected(NotLeaderMessage(epoch: 5, id: "c2", endpoints: c2), by: 2, now: 1) == c2)
        // c2's WELCOME arrives: it is current already, nothing to switch.
        #expect(choice.welcomed(by: 1) == nil && choice.current == c2)
        // A WELCOME from c3 (a later leader): current becomes c3, and no wait is left behind.
        #expect(choice.welcomed(by: 2) == c3 && choice.currentIndex == 2)
        #expect(choice.tick(now: 10 * second) == nil)
        // An index the node has no socket for changes nothing.
        #expect(choice.welcomed(by: 7) == nil && choice.current == c3)
    }

    @Test func aNotLeaderFromAnotherSocketLeavesTheCurrentCoordinatorsWait() {
        var choice = CoordinatorChoice(coordinator: c1, others: [c2, c3], timeout: .seconds(1))
        choice.greeted(now: 0)
        // c2 names c1, the current: nothing changes, and c1's silence still counts.
        #expect(choice.redirected(NotLeaderMessage(epoch: 4, id: "c1", endpoints: c1), by: 1, now: 1) == nil)
        #expect(choice.tick(now: second) == .switchTo(c2))
    }
}
