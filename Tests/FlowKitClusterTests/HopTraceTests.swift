import Foundation
@_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct HopTraceTests {
    @Test func flushedRecordsReachTheFileAsJSONLinesInTheOrderTheyWereNoted() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hop-trace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let trace = HopTrace(every: 50, path: directory.appendingPathComponent("node-1.jsonl").path)
        #expect(trace.samples(100) && !trace.samples(101))

        trace.note(100, .nodeReceived, at: 1_000)
        trace.note(100, .nodeSubmitted, at: 1_002)
        trace.flush()
        trace.note(150, .nodeApplied, at: 2_000)
        trace.flush()
        trace.flush()  // nothing noted since: nothing written
        trace.drain()

        let text = try String(contentsOfFile: trace.path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        let records = try lines.map { line in
            try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        #expect(records.map { $0["seq"] as? Int } == [100, 100, 150])
        #expect(records.map { $0["stage"] as? String } == ["node.received", "node.submitted", "node.applied"])
        #expect(records.map { $0["us"] as? Int } == [1_000, 1_002, 2_000])
        #expect(text.hasSuffix("\n"))
    }

    /// Replication notes whole groups: the sampled seqs of a range without a look at each, and of
    /// entry records by the seq each carries.
    @Test func theSampledSeqsOfARangeAndOfRecords() throws {
        let trace = HopTrace(every: 50, path: "/dev/null")
        #expect(Array(trace.sampled(in: 1...49)).isEmpty)
        #expect(Array(trace.sampled(in: 1...100)) == [50, 100])
        #expect(Array(trace.sampled(in: 50...50)) == [50])
        #expect(Array(trace.sampled(in: 51...149)) == [100])

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hop-trace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let recorded = HopTrace(every: 50, path: directory.appendingPathComponent("c2.jsonl").path)
        let records = (99...101).map { seq in
            Entry(
                seq: UInt64(seq), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(seq),
                submittedAt: 0, committedAt: 0, address: "counter/a", payload: []
            ).encoded
        }
        recorded.note(records: records, .standbyDurable, at: 7)
        recorded.flush()
        recorded.drain()
        let text = try String(contentsOfFile: recorded.path, encoding: .utf8)
        #expect(text == #"{"seq":100,"stage":"standby.durable","us":7}"# + "\n")
    }
}
