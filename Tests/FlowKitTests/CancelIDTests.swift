@testable import FlowKitCore
import Testing

@Suite struct CancelIDTests {
    enum Search: Hashable, Sendable { case query, results }
    enum Other: Hashable, Sendable { case query }
    struct Wrapped: Hashable, Sendable { var raw: Int }

    @Test func equalValuesOfOneTypeAreOneID() {
        #expect(CancelID(Search.query) == CancelID(Search.query))
        #expect(CancelID("search") == CancelID("search"))
        #expect(CancelID(Wrapped(raw: 7)) == CancelID(Wrapped(raw: 7)))
        var ids: Set<CancelID> = [CancelID(Search.query), CancelID("search")]
        ids.insert(CancelID(Search.query))
        #expect(ids.count == 2)
    }

    @Test func differentValuesOrTypesNeverCollide() {
        #expect(CancelID(Search.query) != CancelID(Search.results))
        // The same bit pattern in two types: still two ids.
        #expect(CancelID(Search.query) != CancelID(Other.query))
        #expect(CancelID(1 as Int) != CancelID(1 as UInt))
        #expect(CancelID("1") != CancelID(1))
    }

    @Test func wrappingAnIDKeepsItAndTheValueComesBack() {
        let id = CancelID(Search.results)
        #expect(CancelID(id) == id)
        #expect(id.value as? Search == .results)
        #expect(id.description == "results")
    }
}
