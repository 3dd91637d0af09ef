@testable import FlowKitCore
import Testing

@Suite struct SmallListTests {
    @Test func keepsOrderAcrossTheInlineAndArrayForms() {
        var list = SmallList<Int>()
        #expect(list.isEmpty)
        #expect(Array(list) == [])
        list.append(1)
        #expect(!list.isEmpty)
        #expect(Array(list) == [1])
        list.append(2)
        list.append(3)
        #expect(Array(list) == [1, 2, 3])
        #expect(list.underestimatedCount == 3)
    }

    @Test func appendingLeavesTheOriginalAlone() {
        let one = SmallList("a")
        let two = one.appending("b")
        let three = two.appending("c")
        #expect(Array(one) == ["a"])
        #expect(Array(two) == ["a", "b"])
        #expect(Array(three) == ["a", "b", "c"])
    }

    @Test func buildsFromSequencesAndLiterals() {
        #expect(Array(SmallList(contentsOf: 1...4)) == [1, 2, 3, 4])
        #expect(Array(SmallList(contentsOf: EmptyCollection<Int>())) == [])
        let literal: SmallList<Int> = [5, 6]
        #expect(Array(literal) == [5, 6])
    }
}
