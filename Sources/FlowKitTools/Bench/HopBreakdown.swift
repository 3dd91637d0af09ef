@_spi(Wire) import FlowKitCluster
import Foundation
import Histogram

/// Where an event's time goes, hop by hop: the bench's own timestamps of sampled events joined by
/// seq with what the coordinator and every node recorded (``HopTrace``), for `flowkit bench
/// --trace`. All clocks are the same machine's wall clock.
struct HopBreakdown: Codable, Sendable {
    /// One hop's durations over the sampled events, in microseconds.
    struct Hop: Codable, Sendable {
        var name: String
        var latency: LatencySummary
    }

    /// What the bench knows of one sampled event.
    struct BenchSide: Sendable {
        var intended: UInt64
        var sent: UInt64
        var answered: UInt64
    }

    var every: UInt64
    var sampled: Int
    var hops: [Hop]

    /// The hops from the intended send time to the EMITTED at the bench (ordered), then from the
    /// commit to the slowest node's apply (applied on all).
    private static let orderedPath: [(name: String, from: Point, to: Point)] = [
        ("bench: intended → sent", .benchIntended, .benchSent),
        ("bench → node (EMIT read)", .benchSent, .stage(.nodeReceived)),
        ("node: EMIT → SUBMIT sent", .stage(.nodeReceived), .stage(.nodeSubmitted)),
        ("node → coordinator (SUBMIT read)", .stage(.nodeSubmitted), .stage(.coordinatorReceived)),
        ("coordinator: read → ordered", .stage(.coordinatorReceived), .stage(.coordinatorOrdered)),
        ("coordinator: ordered → commit starts", .stage(.coordinatorOrdered), .stage(.coordinatorCommitStarted)),
        ("coordinator: commit (append + fdatasync)", .stage(.coordinatorCommitStarted), .stage(.coordinatorCommitted)),
        // Replicated coordinators: the leader's durable entry to the last standby's confirmation.
        ("leader: durable → FETCHED sent", .stage(.coordinatorCommitted), .slowest(.leaderFetchedSent)),
        ("leader → standby (FETCHED read)", .slowest(.leaderFetchedSent), .slowest(.standbyReceived)),
        ("standby: append + fdatasync", .slowest(.standbyReceived), .slowest(.standbyDurable)),
        ("standby → leader (FETCH read)", .slowest(.standbyDurable), .slowest(.leaderConfirmed)),
        ("leader: last confirmed → ACK sent", .slowest(.leaderConfirmed), .stage(.coordinatorAcknowledged)),
        ("coordinator: committed → ACK sent", .stage(.coordinatorCommitted), .stage(.coordinatorAcknowledged)),
        ("coordinator → node (ACK or ENTRIES read)", .stage(.coordinatorAcknowledged), .stage(.nodeAcknowledged)),
        ("node: ACK → EMITTED queued", .stage(.nodeAcknowledged), .stage(.nodeAnswered)),
        ("node: EMITTED queued → to the engine", .stage(.nodeAnswered), .stage(.nodeAnswerSent)),
        ("node → bench (EMITTED read)", .stage(.nodeAnswerSent), .benchAnswered),
        ("ordered, end to end", .benchIntended, .benchAnswered),
        ("coordinator: committed → ENTRIES sent", .stage(.coordinatorCommitted), .stage(.coordinatorPublished)),
        ("coordinator → slowest node (ENTRIES read)", .stage(.coordinatorPublished), .slowest(.nodeEntriesReceived)),
        ("slowest node: read → applied", .slowest(.nodeEntriesReceived), .slowest(.nodeApplied)),
        ("applied on all, end to end", .benchIntended, .slowest(.nodeApplied)),
    ]

    private enum Point {
        case benchIntended, benchSent, benchAnswered
        /// The origin node's or the coordinator's record (one per event).
        case stage(HopTrace.Stage)
        /// The latest of every node's records of this stage.
        case slowest(HopTrace.Stage)
    }

    /// Reads every process's trace file in `directory` and joins it with the bench's side.
    static func make(directory: String, every: UInt64, bench: [UInt64: BenchSide]) -> HopBreakdown {
        // seq → stage → times (one per process that recorded it).
        var stages: [UInt64: [String: [UInt64]]] = [:]
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for file in files where file.hasSuffix(".jsonl") {
            guard let text = try? String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                guard let record = try? JSONDecoder().decode(HopTrace.Line.self, from: Data(line.utf8)), bench[record.seq] != nil else { continue }
                stages[record.seq, default: [:]][record.stage, default: []].append(record.us)
            }
        }
        func time(_ point: Point, seq: UInt64, side: BenchSide) -> UInt64? {
            switch point {
            case .benchIntended: side.intended
            case .benchSent: side.sent == 0 ? nil : side.sent
            case .benchAnswered: side.answered
            case .stage(let stage): stages[seq]?[stage.rawValue]?.first
            case .slowest(let stage): stages[seq]?[stage.rawValue]?.max()
            }
        }
        var histograms = orderedPath.map { _ in LatencyRecorder.histogram() }
        for (seq, side) in bench {
            for (index, hop) in orderedPath.enumerated() {
                guard let from = time(hop.from, seq: seq, side: side), let to = time(hop.to, seq: seq, side: side) else { continue }
                histograms[index].record(to > from ? to - from : 0)
            }
        }
        // A hop no process recorded (the replicated ones, with one coordinator) is left out.
        let hops = zip(orderedPath, histograms).filter { $1.totalCount > 0 }.map { Hop(name: $0.name, latency: LatencySummary($1)) }
        return HopBreakdown(every: every, sampled: bench.count, hops: hops)
    }

    /// Writes the bench's side of the sampled events to `bench.jsonl` in `directory`, in the
    /// processes' own record format (stages `bench.intended`, `bench.sent`, `bench.answered`), so
    /// that a kept trace (`--data-dir`) holds every hop of every sampled event, to look at one by
    /// one: when the slowest were sent, and which hops they were slow at.
    static func writeBenchSide(_ bench: [UInt64: BenchSide], to directory: String) {
        var lines: [HopTrace.Line] = []
        for (seq, side) in bench.sorted(by: { $0.key < $1.key }) {
            for (stage, us) in [("bench.intended", side.intended), ("bench.sent", side.sent), ("bench.answered", side.answered)] where us != 0 {
                lines.append(HopTrace.Line(seq: seq, stage: stage, us: us))
            }
        }
        _ = FileManager.default.createFile(atPath: "\(directory)/bench.jsonl", contents: Data(HopTrace.jsonLines(lines).utf8))
    }

    /// The table `flowkit bench --trace` prints.
    var text: String {
        var lines = ["where the time goes (\(sampled) events sampled, one seq in \(every); µs)"]
        lines.append(BenchFormat.left("hop", 46) + ["p50", "p90", "p99", "max", "count"].map { BenchFormat.right($0, 10) }.joined())
        for hop in hops {
            let latency = hop.latency
            lines.append(
                "  " + BenchFormat.left(hop.name, 44) + [latency.p50, latency.p90, latency.p99, latency.max].map { BenchFormat.right(BenchFormat.count(Int($0)), 10) }.joined()
                    + BenchFormat.right(BenchFormat.count(Int(latency.count)), 10)
            )
        }
        return lines.joined(separator: "\n")
    }
}
