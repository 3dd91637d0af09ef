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
}
