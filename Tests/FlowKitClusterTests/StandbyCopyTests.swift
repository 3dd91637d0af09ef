@_spi(Wire) @_spi(Benchmarks) @testable import FlowKitCluster
import Testing

@Suite struct StandbyCopyTests {
    let leader = LeaderRecord(id: "c1", epoch: 4, endpoints: CoordinatorEndpoints(submit: "tcp://a:1", publish: "tcp://a:2", sync: "tcp://a:3"))

    func record(_ seq: UInt64, epoch: UInt32) -> [UInt8] {
        Entry(
            seq: seq, epoch: epoch, kind: .event, codec: .json, origin: 1, session: 1, submission: seq,
            submittedAt: 0, committedAt: 0, address: "counter/a", payload: Array("{}".utf8)
        ).encoded
    }

    func fetch(_ action: StandbyCopy.Action?) throws -> FetchRequest {
        guard case .send(let frames) = action else { throw ProtocolError(.malformed, "expected a FETCH, got \(String(describing: action))") }
        var (_, reader) = try WireHeader.read(frames[0], expecting: .fetch)
        return try FetchRequest(reader: &reader)
    }

    @Test func theCopyAsksForMoreWhileItSyncsAndReportsEachSyncAtOnce() throws {
        var copy = StandbyCopy(id: "c2", durable: 10, lastEpoch: 3, committed: 10)
        #expect(copy.follow(nil, now: 0).isEmpty)
        let first = try fetch(copy.follow(leader, now: 0).first)
        #expect(first.durable == 10 && first.end == 10 && first.endEpoch == 3 && first.epoch == 4 && first.id == "c2")
        // Nothing more until the answer.
        #expect(copy.tick(now: 10).isEmpty)

        let answer = FetchedMessage(request: first.request, epoch: 4, committed: 12, records: [record(11, epoch: 3), record(12, epoch: 4)])
        let actions = try copy.received(answer, now: 20)
        // It asks for what follows 12 at once, while 11...12 sync. The leader committed 12, but
        // the copy holds only 10 durably: it commits nothing yet.
        #expect(actions.count == 2 && actions.last == .append(answer.records, through: 12, lastEpoch: 4))
        let second = try fetch(actions.first)
        #expect(second.durable == 10 && second.end == 12 && second.endEpoch == 4 && second.request == first.request + 1)
        #expect(copy.committed == 10)

        // 13 arrives while 11...12 sync: it waits for the next append, and the copy asks again.
        let third = try fetch(copy.received(FetchedMessage(request: second.request, epoch: 4, committed: 12, records: [record(13, epoch: 4)]), now: 30).first)
        #expect(third.durable == 10 && third.end == 13)

        // 11...12 durable: a FETCH says so at once, then 13 is written, then the commit.
        let next = copy.appended(through: 12, lastEpoch: 4, now: 40)
        #expect(next.count == 3 && next[1] == .append([record(13, epoch: 4)], through: 13, lastEpoch: 4) && next[2] == .commit(through: 12))
        let report = try fetch(next.first)
        #expect(report.durable == 12 && report.end == 13)
        #expect(copy.committed == 12 && copy.durable == 12 && copy.end == 13)
    }

    @Test func anAnswerThatOverlapsWhatTheCopyHoldsAddsOnlyWhatIsNew() throws {
        var copy = StandbyCopy(id: "c2", durable: 10, lastEpoch: 3, committed: 10)
        let first = try fetch(copy.follow(leader, now: 0).first)
        let second = try fetch(copy.received(FetchedMessage(request: first.request, epoch: 4, committed: 0, records: [record(11, epoch: 4)]), now: 1).first)
        let report = try fetch(copy.appended(through: 11, lastEpoch: 4, now: 2).first)
        // The leader answered the second FETCH (from 11) with 12, and the report (also from 11,
        // sent before that answer arrived) with 12 again: the repeat is dropped.
        #expect(second.end == 11 && report.end == 11)
        let both = try copy.received(FetchedMessage(request: second.request, epoch: 4, committed: 0, records: [record(12, epoch: 4)]), now: 3)
        #expect(both.last == .append([record(12, epoch: 4)], through: 12, lastEpoch: 4))
        let again = try copy.received(FetchedMessage(request: report.request, epoch: 4, committed: 0, records: [record(12, epoch: 4)]), now: 4)
        #expect(!again.contains { if case .append = $0 { true } else { false } } && copy.end == 12)
    }

    @Test func pastItsWindowTheCopyAsksForNothingMoreUntilAnAppendFinishes() throws {
        let big = record(11, epoch: 4)
        var copy = StandbyCopy(id: "c2", durable: 10, lastEpoch: 4, committed: 10, maxBytes: UInt32(big.count + 1))
        let first = try fetch(copy.follow(leader, now: 0).first)
        // 11 is being written; 12 and 13 wait past the window: no FETCH.
        let second = try fetch(copy.received(FetchedMessage(request: first.request, epoch: 4, committed: 0, records: [big]), now: 1).first)
        let full = try copy.received(FetchedMessage(request: second.request, epoch: 4, committed: 0, records: [record(12, epoch: 4), record(13, epoch: 4)]), now: 2)
        #expect(full.isEmpty && copy.tick(now: 3).isEmpty)
        let next = copy.appended(through: 11, lastEpoch: 4, now: 4)
        #expect(try fetch(next.first).end == 13 && next.contains(.append([record(12, epoch: 4), record(13, epoch: 4)], through: 13, lastEpoch: 4)))
    }

    @Test func aCutAskedForWhileAnAppendSyncsComesAfterItAndEarlierAnswersAreIgnored() throws {
        var copy = StandbyCopy(id: "c2", durable: 20, lastEpoch: 3, committed: 15)
        let first = try fetch(copy.follow(leader, now: 0).first)
        let second = try fetch(copy.received(FetchedMessage(request: first.request, epoch: 4, committed: 15, records: [record(21, epoch: 3)]), now: 1).first)
        // The leader's log disagrees at 21: cut back to 18, once the append of 21 lands.
        #expect(try copy.received(FetchedMessage(request: second.request, epoch: 4, committed: 15, keep: 18, records: []), now: 2).isEmpty)
        #expect(copy.appended(through: 21, lastEpoch: 3, now: 3) == [.truncate(keep: 18)])
        // Nothing is asked for, and nothing answered before the cut is taken, until it is done.
        #expect(copy.tick(now: 3 + copy.retryAfter).isEmpty)
        #expect(try copy.received(FetchedMessage(request: second.request, epoch: 4, committed: 15, records: [record(22, epoch: 3)]), now: 4).isEmpty)
        let again = try fetch(copy.truncated(durable: 18, lastEpoch: 3, now: 5).first)
        #expect(again.durable == 18 && again.end == 18 && again.endEpoch == 3)
    }

    @Test func aCopyThatDisagreesIsCutBackAndFetchesFromThere() throws {
        var copy = StandbyCopy(id: "c2", durable: 20, lastEpoch: 3, committed: 15)
        let first = try fetch(copy.follow(leader, now: 0).first)
        let cut = try copy.received(FetchedMessage(request: first.request, epoch: 4, committed: 15, keep: 17, records: []), now: 1)
        #expect(cut == [.truncate(keep: 17)])
        let again = try fetch(copy.truncated(durable: 17, lastEpoch: 3, now: 2).first)
        #expect(again.durable == 17 && again.end == 17 && again.endEpoch == 3)
        // Committed entries are never cut: a leader that asks is refused.
        var other = StandbyCopy(id: "c2", durable: 20, lastEpoch: 3, committed: 15)
        let request = try fetch(other.follow(leader, now: 0).first)
        #expect(throws: ProtocolError.self) {
            try other.received(FetchedMessage(request: request.request, epoch: 4, committed: 15, keep: 12, records: []), now: 1)
        }
    }

    @Test func aCopyWithADeposedLeadersTailCommitsNothingOfItBeforeItIsCut() throws {
        // A leader that was killed and restarts as a standby: its log ends with entries it wrote
        // and never committed, and the new leader has committed further than that.
        var copy = StandbyCopy(id: "c2", durable: 20, lastEpoch: 2, committed: 0)
        let first = try fetch(copy.follow(leader, now: 0).first)
        let cut = try copy.received(FetchedMessage(request: first.request, epoch: 4, committed: 30, keep: 17, records: []), now: 1)
        #expect(cut == [.truncate(keep: 17)] && copy.committed == 0)
        let again = try fetch(copy.truncated(durable: 17, lastEpoch: 2, now: 2).first)
        // Confirmed to 17 now: committed as far as the copy goes, then the rest is fetched.
        let next = try copy.received(FetchedMessage(request: again.request, epoch: 4, committed: 30, records: [record(18, epoch: 4)]), now: 3)
        #expect(next.count == 3 && next[1...] == [.append([record(18, epoch: 4)], through: 18, lastEpoch: 4), .commit(through: 17)] && copy.committed == 17)
    }

    /// Found by the paused-leader test: a leader that stepped down fetched from where its copy
    /// stood before it led, and its log refused the entries it already held.
    @Test func aCopyResumedAfterLeadingFetchesFromItsLogsEnd() throws {
        var copy = StandbyCopy(id: "c2", durable: 0, lastEpoch: 0, committed: 0)
        #expect(copy.follow(nil, now: 0).isEmpty)  // it leads: no fetching
        copy.resume(durable: 528, lastEpoch: 1, committed: 520)
        let request = try fetch(copy.follow(leader, now: 1).first)
        #expect(request.durable == 528 && request.end == 528 && request.endEpoch == 1)
        #expect(copy.committed == 520)
        // The new leader cuts what was never committed.
        #expect(try copy.received(FetchedMessage(request: request.request, epoch: 4, committed: 600, keep: 524, records: []), now: 2) == [.truncate(keep: 524)])
    }

    @Test func staleOrBrokenAnswersChangeNothing() throws {
        var copy = StandbyCopy(id: "c2", durable: 10, lastEpoch: 3, committed: 10)
        let first = try fetch(copy.follow(leader, now: 0).first)
        // An answer to another request: ignored.
        #expect(try copy.received(FetchedMessage(request: 99, epoch: 4, committed: 0, records: [record(11, epoch: 4)]), now: 1).isEmpty)
        // Records that do not continue the copy: refused, and the FETCH is sent again on the next tick.
        #expect(throws: ProtocolError.self) {
            try copy.received(FetchedMessage(request: first.request, epoch: 4, committed: 0, records: [record(12, epoch: 4)]), now: 1)
        }
        #expect(try fetch(copy.tick(now: 2).first).durable == 10)
        // An unanswered FETCH is sent again after the retry interval; a refused one sooner.
        #expect(copy.tick(now: 3).isEmpty)
        #expect(try fetch(copy.tick(now: 2 + copy.retryAfter).first).durable == 10)
        _ = copy.refused(ErrorReply(request: copy.lastRequest, error: ProtocolError(.coordinatorUnavailable, "not yet")), now: 5)
        #expect(copy.tick(now: 4 + copy.retryAfterRefusal).isEmpty)
        #expect(try fetch(copy.tick(now: 5 + copy.retryAfterRefusal).first).durable == 10)
    }

    @Test func aCopyBehindTheLeadersRetainedLogInstallsItsSnapshotThenFetchesFromIt() throws {
        var copy = StandbyCopy(id: "c2", durable: 10, lastEpoch: 3, committed: 10)
        let first = try fetch(copy.follow(leader, now: 0).first)
        // The leader kept its log from 500 on: the copy asks for its snapshot.
        let behind = ErrorReply(request: first.request, error: ProtocolError(.notFound, "this log starts at 500"))
        let ask = copy.refused(behind, now: 1)
        guard case .send(let frames) = ask.first, let type = try? WireHeader.read(frames[0], expecting: .snapshotRequest).0 else {
            Issue.record("expected a SNAPSHOT request, got \(ask)")
            return
        }
        #expect(type == .snapshotRequest && copy.isInstalling)
        let request = copy.lastRequest
        // No FETCH meanwhile, and an answer to the old one is ignored.
        #expect(copy.tick(now: 2 + copy.retryAfter).isEmpty)
        #expect(try copy.received(FetchedMessage(request: first.request, epoch: 4, committed: 0, records: [record(11, epoch: 3)]), now: 3).isEmpty)

        let a = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 611, state: Array("1".utf8))
        let b = SnapshotChunkMessage.Instance(address: "counter/b", lastSeq: 640, state: Array("2".utf8))
        #expect(copy.received(SnapshotChunkMessage(request: request, seq: 640, epoch: 4, chunk: 0, isLast: false, instances: [a]), now: 4).isEmpty)
        // The last chunk: the entry at 640 is asked for, for its epoch.
        // The last chunk carries the sessions the leader's duplicate table remembers.
        var last = SnapshotChunkMessage(request: request, seq: 640, epoch: 4, chunk: 1, isLast: true, instances: [b])
        let sessions = [DedupTable.Remembered(origin: 1, session: 7, watermark: 90, lastSeq: 638, above: [.init(id: 92, seq: 639)])]
        last.sessions = sessions
        let range = copy.received(try SnapshotChunkMessage(frames: last.frames), now: 5)
        guard case .send(let rangeFrames) = range.first else {
            Issue.record("expected a RANGE request, got \(range)")
            return
        }
        var (_, rangeReader) = try WireHeader.read(rangeFrames[0], expecting: .rangeRequest)
        let asked = try RangeRequest(reader: &rangeReader)
        #expect(asked.from == 640 && asked.to == 640)
        let entry = try #require(try? Entry(decoding: record(640, epoch: 4)))
        let install = copy.received(RangeMessage(request: asked.request, epoch: 4, head: 700, entries: [entry]), now: 6)
        #expect(install == [.install(seq: 640, epoch: 4, instances: [a, b], sessions: sessions)])
        // Installed: the copy fetches from 640, committed there.
        let next = try fetch(copy.installed(seq: 640, epoch: 4, now: 7).first)
        #expect(next.durable == 640 && next.end == 640 && next.endEpoch == 4 && copy.committed == 640 && !copy.isInstalling)
        // Entries of a deposed leader after it are cut back to the snapshot's seq: the empty log
        // has no record there, and the copy still says the snapshot's epoch (seed 399).
        let afterCut = try fetch(copy.truncated(durable: 640, lastEpoch: 0, now: 8).first)
        #expect(afterCut.end == 640 && afterCut.endEpoch == 4)
    }

    @Test func aSnapshotWithAMissingChunkIsAskedForAgain() throws {
        var copy = StandbyCopy(id: "c2", durable: 0, lastEpoch: 0, committed: 0)
        let first = try fetch(copy.follow(leader, now: 0).first)
        _ = copy.refused(ErrorReply(request: first.request, error: ProtocolError(.notFound, "compacted")), now: 1)
        let request = copy.lastRequest
        // Chunk 1 without chunk 0: asked again, under a new request.
        let again = copy.received(SnapshotChunkMessage(request: request, seq: 9, epoch: 4, chunk: 1, isLast: true, instances: []), now: 2)
        #expect(again.count == 1 && copy.lastRequest == request + 1)
        // Unanswered for the install's retry interval: asked again.
        #expect(copy.tick(now: 3).isEmpty)
        #expect(copy.tick(now: 2 + copy.installRetryAfter).count == 1 && copy.lastRequest == request + 2)
    }

    @Test func theLeaderAnswersFromItsLogsEpochs() {
        // The leader's log: 1...10 of epoch 1, 11...20 of epoch 3, 21...30 of epoch 5.
        var epochs = EpochHistory()
        epochs.note(seq: 1, epoch: 1)
        epochs.note(seq: 11, epoch: 3)
        epochs.note(seq: 21, epoch: 5)
        func answer(durable: UInt64, lastEpoch: UInt32, firstSeq: UInt64 = 1) -> FetchAnswer {
            FetchAnswer(
                FetchRequest(request: 1, epoch: 5, durable: durable, end: durable, endEpoch: lastEpoch, maxBytes: 1_000, id: "c2"),
                written: 30, firstSeq: firstSeq, epochs: epochs
            )
        }
        #expect(answer(durable: 0, lastEpoch: 0) == .entries(from: 1))
        #expect(answer(durable: 15, lastEpoch: 3) == .entries(from: 16))
        #expect(answer(durable: 30, lastEpoch: 5) == .wait)
        // Its entries from some point up to 18 are of epoch 4, a deposed leader's that this log
        // never had: the logs may agree before 18, not at it.
        #expect(answer(durable: 18, lastEpoch: 4) == .truncate(keep: 17))
        // An epoch this log never had, after everything: back to the end of the latest earlier one.
        #expect(answer(durable: 25, lastEpoch: 4) == .truncate(keep: 20))
        // Longer than the leader's log, in its last epoch: cut to the leader's end.
        #expect(answer(durable: 33, lastEpoch: 5) == .truncate(keep: 30))
        // Behind the retained log: a snapshot is needed (agreement cannot be checked there).
        #expect(answer(durable: 5, lastEpoch: 1, firstSeq: 9) == .behindRetention(firstSeq: 9))
        #expect(answer(durable: 0, lastEpoch: 0, firstSeq: 9) == .behindRetention(firstSeq: 9))
        #expect(answer(durable: 9, lastEpoch: 1, firstSeq: 9) == .entries(from: 10))
        // Nothing past a snapshot installed before a restart, its entry's epoch unknown: what a
        // snapshot holds is committed, so the logs agree there.
        #expect(answer(durable: 12, lastEpoch: 0, firstSeq: 9) == .entries(from: 13))
        #expect(answer(durable: 30, lastEpoch: 0) == .wait)
        // Past the leader's log, it cannot be a committed snapshot's end.
        #expect(answer(durable: 33, lastEpoch: 0) == .truncate(keep: 0))
    }

    @Test func theNewMessagesRoundTrip() throws {
        let fetch = FetchRequest(request: 7, epoch: 4, durable: 12, end: 14, endEpoch: 3, maxBytes: 1 << 20, id: "c2")
        var (_, reader) = try WireHeader.read(fetch.frames[0], expecting: .fetch)
        #expect(try FetchRequest(reader: &reader) == fetch)
        // Nothing past a snapshot installed before a restart: an end without its epoch.
        let afterRestart = FetchRequest(request: 1, epoch: 4, durable: 524, end: 524, endEpoch: 0, maxBytes: 1 << 20, id: "c2")
        (_, reader) = try WireHeader.read(afterRestart.frames[0], expecting: .fetch)
        #expect(try FetchRequest(reader: &reader) == afterRestart)
        let fetched = FetchedMessage(request: 7, epoch: 4, committed: 11, records: [record(13, epoch: 4)])
        #expect(try FetchedMessage(frames: fetched.frames) == fetched)
        let cut = FetchedMessage(request: 8, epoch: 4, committed: 11, keep: 11, records: [])
        #expect(try FetchedMessage(frames: cut.frames) == cut)
        let notLeader = NotLeaderMessage(epoch: 4, id: "c1", endpoints: leader.endpoints)
        #expect(try NotLeaderMessage(frames: notLeader.frames) == notLeader)
        // Both a truncation and records: refused.
        let both = FetchedMessage(request: 9, epoch: 4, committed: 0, keep: 3, records: [record(4, epoch: 4)])
        #expect(throws: ProtocolError.self) { try FetchedMessage(frames: both.frames) }
        // A FETCH that names no coordinator, an end epoch without an entry, or durable past its
        // end: refused.
        for bad in [
            FetchRequest(request: 1, epoch: 1, durable: 1, end: 1, endEpoch: 1, maxBytes: 1, id: ""),
            FetchRequest(request: 1, epoch: 1, durable: 0, end: 0, endEpoch: 2, maxBytes: 1, id: "c2"),
            FetchRequest(request: 1, epoch: 1, durable: 3, end: 2, endEpoch: 1, maxBytes: 1, id: "c2"),
        ] {
            var (_, reader) = try WireHeader.read(bad.frames[0], expecting: .fetch)
            #expect(throws: ProtocolError.self) { try FetchRequest(reader: &reader) }
        }
    }
}
