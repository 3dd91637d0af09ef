#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FlowKitLog
import Testing

@Suite("MetaStore")
struct MetaStoreTests {
    @Test func valuesRoundTripAcrossInstances() throws {
        let dir = TemporaryDirectory("meta")
        let store = try MetaStore(directory: dir.file("state"), logger: quietLogger)
        #expect(try store.load().isEmpty)
        try store.store(["cluster": "blue", "snapshot.seq": "1200", "": "", "unicode": "ü→✓"])
        let reopened = try MetaStore(directory: dir.file("state"), logger: quietLogger)
        #expect(try reopened.load() == ["cluster": "blue", "snapshot.seq": "1200", "": "", "unicode": "ü→✓"])
    }

    @Test func epochIncrementsOncePerStart() throws {
        let dir = TemporaryDirectory("epoch")
        for expected in UInt64(1)...5 {
            let store = try MetaStore(directory: dir.path, logger: quietLogger)
            #expect(try store.increment() == expected)
        }
        let store = try MetaStore(directory: dir.path, logger: quietLogger)
        #expect(try store.load()["epoch"] == "5")
        try store.store(["epoch": "x"])
        #expect((#expect(throws: LogError.self) { try store.increment() })?.code == .corrupt)
    }

    @Test func damagedFileIsAnErrorNotAReset() throws {
        let dir = TemporaryDirectory("metacorrupt")
        let store = try MetaStore(directory: dir.path, logger: quietLogger)
        try store.increment()
        for offset in [0, 20, 36, fileSize(dir.file("meta")) - 1] {
            var bytes = readFile(dir.file("meta"))
            bytes[offset] ^= 0x04
            writeFile(dir.file("meta.damaged"), bytes)
            rename(dir.file("meta"), dir.file("meta.good"))
            rename(dir.file("meta.damaged"), dir.file("meta"))
            let error = #expect(throws: LogError.self) { try store.load() }
            #expect(error?.code == .corrupt, "byte \(offset)")
            rename(dir.file("meta.good"), dir.file("meta"))
        }
        truncateFile(dir.file("meta"), to: 10)
        #expect((#expect(throws: LogError.self) { try store.load() })?.code == .corrupt)
    }

    @Test func failedWriteLeavesTheOldValues() throws {
        let dir = TemporaryDirectory("metaatomic")
        let faults = FaultSwitch()
        let store = try MetaStore(directory: dir.path, logger: quietLogger, faultInjection: faults.injection)
        try store.store(["epoch": "7"])
        for kind in [FaultInjection.Operation.Kind.sync, .rename] {
            faults.arm(.init(errno: ENOSPC)) { $0.kind == kind }
            #expect((#expect(throws: LogError.self) { try store.store(["epoch": "8"]) })?.code == .diskFull)
            #expect(try store.load() == ["epoch": "7"], "after a failed \(kind)")
        }
        faults.arm(.init(errno: ENOSPC, bytesWritten: 5), when: isWrite)
        #expect(throws: LogError.self) { try store.increment() }
        #expect(try store.load() == ["epoch": "7"])
        #expect(fileSize(dir.file("meta.tmp")) == -1, "the temporary file was removed")
        #expect(try store.increment() == 8)
    }
}
