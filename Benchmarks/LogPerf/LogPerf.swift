#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FlowKitLog
import Logging

/// Measures FlowKitLog on this machine: CRC-32C, group commit (records/s and commit latency
/// per batch size and durability) and reads of a 1,000,000-record log.
///
/// `swift run -c release --package-path Benchmarks log-perf [directory]`; the directory
/// (default: a fresh one under /tmp) should be on the disk the coordinator will use.
@main
struct LogPerf {
    static let logger = Logger(label: "log-perf") { _ in SwiftLogNoOpLogHandler() }
    static let payload = [UInt8](repeating: 0xAB, count: 64)

    static func main() throws {
        let base = CommandLine.arguments.dropFirst().first ?? makeTemporaryDirectory()
        print("FlowKitLog benchmarks in \(base) (64-byte payloads)")
        crc()
        print("\n| durability | batch | records/s | commits/s | commit p50 | commit p99 |")
        print("|---|---|---|---|---|---|")
        for durability in [SegmentLog.Durability.synced, .relaxed] {
            for batch in [1, 64, 512, 4096] {
                try commits(durability: durability, batch: batch, directory: "\(base)/\(durability)-\(batch)")
            }
        }
        try reads(directory: "\(base)/read")
        removeTree(base)
    }

    static func crc() {
        let buffer = [UInt8](repeating: 0x5A, count: 1 << 20)
        let start = ContinuousClock.now
        var sink: UInt32 = 0
        for _ in 0..<500 { sink ^= CRC32C.checksum(buffer) }
        let seconds = seconds(start.duration(to: .now))
        print("CRC-32C: \(Int(500.0 / seconds)) MiB/s (sink \(sink))")
    }

    static func commits(durability: SegmentLog.Durability, batch: Int, directory: String) throws {
        let log = try SegmentLog(directory: directory, options: .init(durability: durability), logger: logger)
        var latencies: [Duration] = []
        var seq: UInt64 = 1
        let start = ContinuousClock.now
        let budget = Duration.seconds(3)
        let maxRecords = 2_000_000
        while start.duration(to: .now) < budget, Int(seq) < maxRecords {
            for _ in 0..<batch {
                try log.append(seq: seq, payload: payload)
                seq += 1
            }
            let before = ContinuousClock.now
            try log.commit()
            latencies.append(before.duration(to: .now))
        }
        let elapsed = seconds(start.duration(to: .now))
        latencies.sort()
        let records = Int(seq - 1)
        print(
            "| \(durability) | \(batch) | \(Int(Double(records) / elapsed)) | \(Int(Double(latencies.count) / elapsed)) "
                + "| \(micros(latencies[latencies.count / 2])) | \(micros(latencies[latencies.count * 99 / 100])) |"
        )
        log.close()
    }

    static func reads(directory: String) throws {
        let count: UInt64 = 1_000_000
        do {
            let log = try SegmentLog(directory: directory, options: .init(durability: .relaxed), logger: logger)
            var seq: UInt64 = 1
            while seq <= count {
                for _ in 0..<4096 where seq <= count {
                    try log.append(seq: seq, payload: payload)
                    seq += 1
                }
                try log.commit()
            }
            log.close()
        }
        var start = ContinuousClock.now
        let log = try SegmentLog(directory: directory, logger: logger)
        let recovery = seconds(start.duration(to: .now))
        print("\nopen + recover \(count) records (\(log.segmentCount) segments): \(Int(recovery * 1000)) ms, \(Int(Double(count) / recovery)) records/s")

        for page in [100, 1_000, 10_000] {
            start = ContinuousClock.now
            var seq: UInt64 = 1
            while seq <= count {
                let records = try log.read(from: seq, maxCount: page, maxBytes: .max)
                seq += UInt64(records.count)
            }
            let elapsed = seconds(start.duration(to: .now))
            print("sequential read, pages of \(page): \(Int(Double(count) / elapsed)) records/s")
        }

        var random = SystemRandomNumberGenerator()
        let reads = 20_000
        var latencies: [Duration] = []
        start = ContinuousClock.now
        for _ in 0..<reads {
            let from = UInt64.random(in: 1...(count - 100), using: &random)
            let before = ContinuousClock.now
            let records = try log.read(from: from, maxCount: 100)
            latencies.append(before.duration(to: .now))
            precondition(records.count == 100 && records[0].seq == from)
        }
        let elapsed = seconds(start.duration(to: .now))
        latencies.sort()
        print(
            "random read of 100 records: \(Int(Double(reads * 100) / elapsed)) records/s, "
                + "p50 \(micros(latencies[reads / 2])), p99 \(micros(latencies[reads * 99 / 100]))"
        )
        log.close()
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func micros(_ duration: Duration) -> String {
        let value = seconds(duration) * 1e6
        return value < 10 ? String(Double(Int(value * 10)) / 10) + " µs" : "\(Int(value)) µs"
    }

    static func makeTemporaryDirectory() -> String {
        var template = Array("/tmp/flowkit-log-perf-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    static func removeTree(_ path: String) {
        guard let dir = opendir(path) else {
            unlink(path)
            return
        }
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { removeTree(path + "/" + name) }
        }
        closedir(dir)
        rmdir(path)
    }
}
