#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FlowKitLog
import Logging
import Testing

@Suite("SnapshotStore")
struct SnapshotStoreTests {
    private func blob(_ seq: UInt64, size: Int = 10_000) -> [UInt8] {
        payload(for: seq, size: size)
    }

    @Test func saveAndLoadTheLatest() throws {
        let dir = TemporaryDirectory("snap")
        let store = try SnapshotStore(directory: dir.path, logger: quietLogger)
        #expect(try store.latest() == nil)
        try store.save(Snapshot(seq: 100, bytes: blob(100)))
        try store.save(Snapshot(seq: 250, bytes: blob(250)))
        #expect(try store.latest() == Snapshot(seq: 250, bytes: blob(250)))
        #expect(try store.load(seq: 100) == Snapshot(seq: 100, bytes: blob(100)))
        try store.save(Snapshot(seq: 7, bytes: []))
        #expect(try store.seqs() == [250, 100], "only the newest two are kept")
        let reopened = try SnapshotStore(directory: dir.path, logger: quietLogger)
        #expect(try reopened.latest()?.seq == 250)
    }

    /// A body of several pieces and a part (each piece written out before the next) reads back
    /// whole, byte for byte.
    @Test func aLargeSnapshotWrittenAPieceAtATimeReadsBackWhole() throws {
        let dir = TemporaryDirectory("snaplarge")
        let store = try SnapshotStore(directory: dir.path, logger: quietLogger)
        let bytes = blob(9, size: 3 << 20 + 12_345)
        try store.save(Snapshot(seq: 9, bytes: bytes))
        #expect(try SnapshotStore(directory: dir.path, logger: quietLogger).latest() == Snapshot(seq: 9, bytes: bytes))
    }

    @Test func retainKeepsTheNewestK() throws {
        let dir = TemporaryDirectory("snapretain")
        let store = try SnapshotStore(directory: dir.path, retain: 3, logger: quietLogger)
        for seq in stride(from: UInt64(10), through: 100, by: 10) {
            try store.save(Snapshot(seq: seq, bytes: blob(seq, size: 100)))
        }
        #expect(try store.seqs() == [100, 90, 80])
    }

    @Test func damagedNewestFallsBackToThePrevious() throws {
        let dir = TemporaryDirectory("snapcorrupt")
        let capture = LogCapture()
        let store = try SnapshotStore(directory: dir.path, logger: capture.logger)
        try store.save(Snapshot(seq: 100, bytes: blob(100)))
        try store.save(Snapshot(seq: 200, bytes: blob(200)))
        let newest = dir.file("snapshot-00000000000000000200.snap")
        flipBit(in: newest, at: 5_000)
        #expect(try store.latest() == Snapshot(seq: 100, bytes: blob(100)))
        #expect(capture.contains(.error, "damaged snapshot"))
        #expect((#expect(throws: LogError.self) { try store.load(seq: 200) })?.code == .corrupt)

        truncateFile(dir.file("snapshot-00000000000000000100.snap"), to: 30)
        #expect(try store.latest() == nil, "no valid snapshot left")
    }

    @Test func sameSeqIsReplacedAtomically() throws {
        let dir = TemporaryDirectory("snapreplace")
        let faults = FaultSwitch()
        let store = try SnapshotStore(directory: dir.path, logger: quietLogger, faultInjection: faults.injection)
        try store.save(Snapshot(seq: 5, bytes: [1, 2, 3]))
        try store.save(Snapshot(seq: 5, bytes: [4, 5]))
        #expect(try store.latest() == Snapshot(seq: 5, bytes: [4, 5]))

        // Disk full half-way through a new snapshot: the old ones are untouched, no temp file stays.
        faults.arm(.init(errno: ENOSPC, bytesWritten: 4_096), when: isWrite)
        let error = #expect(throws: LogError.self) { try store.save(Snapshot(seq: 9, bytes: blob(9))) }
        #expect(error?.code == .diskFull)
        #expect(try store.seqs() == [5])
        #expect(try store.latest() == Snapshot(seq: 5, bytes: [4, 5]))
        #expect(fileSize(dir.file("snapshot-00000000000000000009.snap.tmp")) == -1)
    }

    @Test func interruptedWritesAreCleanedUpOnOpen() throws {
        let dir = TemporaryDirectory("snaptmp")
        writeFile(dir.file("snapshot-00000000000000000042.snap.tmp"), [1, 2, 3])
        let store = try SnapshotStore(directory: dir.path, logger: quietLogger)
        #expect(fileSize(dir.file("snapshot-00000000000000000042.snap.tmp")) == -1)
        #expect(try store.latest() == nil)
    }
}
