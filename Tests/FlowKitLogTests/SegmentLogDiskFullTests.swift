#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FlowKitLog
import Synchronization
import Testing

/// Arms failures for a ``FaultInjection`` hook from the test.
final class FaultSwitch: Sendable {
    private struct Armed {
        var matches: @Sendable (FaultInjection.Operation) -> Bool
        var fault: FaultInjection.Fault
        var skip: Int
    }

    private let armed = Mutex<[Armed]>([])

    /// Fails the operation matching `matches` after letting `skip` matching ones through.
    func arm(_ fault: FaultInjection.Fault, skip: Int = 0, when matches: @escaping @Sendable (FaultInjection.Operation) -> Bool) {
        armed.withLock { $0.append(Armed(matches: matches, fault: fault, skip: skip)) }
    }

    func disarm() { armed.withLock { $0.removeAll() } }

    var injection: FaultInjection {
        FaultInjection { operation in
            self.armed.withLock { list in
                guard let index = list.firstIndex(where: { $0.matches(operation) }) else { return nil }
                if list[index].skip > 0 {
                    list[index].skip -= 1
                    return nil
                }
                return list.remove(at: index).fault
            }
        }
    }
}

let isWrite: @Sendable (FaultInjection.Operation) -> Bool = { if case .write = $0.kind { true } else { false } }

@Suite("SegmentLog disk full and I/O errors")
struct SegmentLogDiskFullTests {
    @Test func failedCommitRollsBackAndTheSameRecordsCanBeRetried() throws {
        let dir = TemporaryDirectory("enospc")
        let faults = FaultSwitch()
        // Not preallocated: the file's size is the log's, so the rollback's truncation shows in it.
        let log = try SegmentLog(directory: dir.path, options: .init(preallocate: false, faultInjection: faults.injection), logger: quietLogger)
        try log.append(records(1...10))
        try log.commit()
        let segment = dir.file(segmentFiles(in: dir.path)[0])
        let committedSize = fileSize(segment)

        faults.arm(.init(errno: ENOSPC, bytesWritten: 37), when: isWrite)  // a partial write, then ENOSPC
        try log.append(records(11...20))
        let error = #expect(throws: LogError.self) { try log.commit() }
        #expect(error?.code == .diskFull)
        #expect(error?.errnoName == "ENOSPC")
        #expect(error?.path == segment)
        #expect("\(error!)".contains("No space left on device"))
        #expect(fileSize(segment) == committedSize, "the partial write was truncated away")
        #expect(log.lastSeq == 10 && log.nextSeq == 11 && log.pendingCount == 0)
        #expect(try readAll(log) == records(1...10))
        #expect(log.statistics.failedCommits == 1)

        try log.append(records(11...20))
        try log.commit()
        log.close()
        let reopened = try SegmentLog(directory: dir.path, logger: quietLogger)
        #expect(try readAll(reopened) == records(1...20))
        #expect(reopened.statistics.bytesTruncatedAtRecovery == 0)
    }

    @Test func failedSyncIsAnIOErrorAndRollsBack() throws {
        let dir = TemporaryDirectory("eio")
        let faults = FaultSwitch()
        let log = try SegmentLog(directory: dir.path, options: .init(preallocate: false, faultInjection: faults.injection), logger: quietLogger)
        try log.append(records(1...5))
        try log.commit()
        faults.arm(.init(errno: EIO)) { $0.kind == .sync }
        try log.append(records(6...9))
        let error = #expect(throws: LogError.self) { try log.commit() }
        #expect(error?.code == .io && error?.errnoName == "EIO")
        #expect(log.lastSeq == 5 && log.nextSeq == 6)
        try log.append(records(6...9))
        try log.commit()
        #expect(try readAll(log) == records(1...9))
    }

    @Test func failureWhileRollingRemovesTheNewSegments() throws {
        let dir = TemporaryDirectory("rollfail")
        let faults = FaultSwitch()
        let options = SegmentLog.Options(segmentBytes: 2048, writeBufferBytes: 512, faultInjection: faults.injection)
        let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        try log.append(records(1...20, size: 40))
        try log.commit()
        let before = segmentFiles(in: dir.path)

        // The third segment created by this batch cannot be written: the error surfaces from append.
        faults.arm(.init(errno: ENOSPC), skip: 2) { $0.kind == .create }
        var failure: LogError?
        for seq in UInt64(21)...400 {
            do { try log.append(seq: seq, payload: payload(for: seq, size: 40)) } catch let error as LogError {
                failure = error
                break
            }
        }
        #expect(failure?.code == .diskFull)
        #expect(segmentFiles(in: dir.path) == before, "segments created by the failed batch are gone")
        #expect(log.lastSeq == 20 && log.nextSeq == 21 && log.pendingCount == 0)

        try log.append(records(21...400, size: 40))
        try log.commit()
        log.close()
        let reopened = try SegmentLog(directory: dir.path, options: SegmentLog.Options(segmentBytes: 2048), logger: quietLogger)
        #expect(try readAll(reopened) == records(1...400, size: 40))
    }

    @Test func failedRollbackPoisonsUntilReopened() throws {
        let dir = TemporaryDirectory("poison")
        let faults = FaultSwitch()
        let log = try SegmentLog(directory: dir.path, options: .init(preallocate: false, faultInjection: faults.injection), logger: quietLogger)
        try log.append(records(1...5))
        try log.commit()
        faults.arm(.init(errno: ENOSPC, bytesWritten: 10), when: isWrite)  // a length and half a checksum
        faults.arm(.init(errno: EIO)) { $0.kind == .truncate }
        try log.append(records(6...7))
        #expect(throws: LogError.self) { try log.commit() }
        let poisoned = #expect(throws: LogError.self) { try log.append(records(6...6)) }
        #expect(poisoned?.code == .failed)
        #expect(poisoned?.message.contains("open it again") == true)
        log.close()

        let reopened = try SegmentLog(directory: dir.path, logger: quietLogger)
        #expect(try readAll(reopened) == records(1...5))
        #expect(reopened.statistics.bytesTruncatedAtRecovery == 10, "recovery cut the partial record")
    }

    /// A real full file system: a 1 MiB tmpfs. Fills it, sees `diskFull`, frees space by
    /// compaction and resumes with the same records.
    @Test(.enabled(if: TmpfsMount.isPermitted, "mounting a tmpfs needs root with CAP_SYS_ADMIN; not permitted here"))
    func realFullFileSystem() throws {
        let dir = TemporaryDirectory("tmpfs")
        let mount = try TmpfsMount(at: dir.path, bytes: 1 << 20)
        defer { mount.unmount() }
        let options = SegmentLog.Options(segmentBytes: 128 << 10)
        let log = try SegmentLog(directory: dir.file("log"), options: options, logger: quietLogger)
        var next: UInt64 = 1
        var failure: LogError?
        while failure == nil, next < 1_000_000 {
            let batch = records(next...(next + 99), size: 100)
            do {
                try log.append(batch)
                try log.commit()
                next += 100
            } catch let error as LogError {
                failure = error
            }
        }
        #expect(failure?.code == .diskFull)
        #expect(failure?.errnoName == "ENOSPC")
        #expect(log.lastSeq == next - 1 && log.nextSeq == next)
        #expect(try readAll(log) == records(1...(next - 1), size: 100))

        // Free space (a snapshot covers the prefix), then retry the very same batch.
        #expect(try log.removePrefix(through: next / 2) > 0)
        let firstKept = log.firstSeq!
        try log.append(records(next...(next + 99), size: 100))
        try log.commit()
        log.close()
        let reopened = try SegmentLog(directory: dir.file("log"), options: options, logger: quietLogger)
        #expect(try readAll(reopened) == records(firstKept...(next + 99), size: 100))
        reopened.close()
    }
}

/// A mount that failed, with what `mount(2)` said.
struct MountError: Error, CustomStringConvertible {
    var description: String
}

/// A size-limited tmpfs mounted for one test.
struct TmpfsMount {
    let path: String

    init(at path: String, bytes: Int) throws {
        guard Glibc.mount("tmpfs", path, "tmpfs", 0, "size=\(bytes)") == 0 else {
            throw MountError(description: "mount tmpfs at \(path) failed: errno \(errno)")
        }
        self.path = path
    }

    func unmount() {
        _ = umount2(path, Int32(MNT_DETACH))
    }

    /// Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN, as in a privileged container).
    static let isPermitted: Bool = {
        guard geteuid() == 0 else { return false }
        let probe = TemporaryDirectory("probe")
        guard let mount = try? TmpfsMount(at: probe.path, bytes: 64 << 10) else { return false }
        mount.unmount()
        return true
    }()
}
