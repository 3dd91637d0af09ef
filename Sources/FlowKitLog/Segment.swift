/// One segment file: where it is, which seqs it holds, and a sparse index of record offsets.
///
/// The index has an entry for the segment's first record and then one every
/// `indexIntervalBytes` bytes, so a lookup binary-searches the index and scans at most one
/// interval of the file.
final class Segment {
    let firstSeq: UInt64
    let path: String
    /// The format of its records' payloads (``SegmentLog/Options/payloadFormat``), from its header.
    var payloadFormat: UInt32
    /// Bytes handed to the OS: header plus records (the log's write buffer is not included).
    var size: Int
    /// The last record assigned to this segment, including records still in the write buffer.
    var lastSeq: UInt64?
    /// Whether bytes were written since the last sync.
    var needsSync = false
    /// How far the file is known to be written (records, then zeros written ahead of them), as
    /// opposed to space only reserved.
    var zeroedThrough: Int
    private(set) var indexSeqs: [UInt64] = []
    private(set) var indexOffsets: [Int] = []
    private var fd: Int32 = -1

    init(firstSeq: UInt64, path: String, size: Int, payloadFormat: UInt32) {
        self.firstSeq = firstSeq
        self.path = path
        self.payloadFormat = payloadFormat
        self.size = size
        self.zeroedThrough = size
    }

    /// The seq a record appended to this segment must carry.
    var nextSeq: UInt64 { lastSeq.map { $0 + 1 } ?? firstSeq }

    /// The open descriptor, opening the file on first use (sealed segments are closed after
    /// recovery and after a roll, and reopened here when read).
    func descriptor(_ fileSystem: FileSystem) throws -> Int32 {
        if fd < 0 { fd = try fileSystem.openFile(path, create: false) }
        return fd
    }

    /// Adopts a descriptor that was just opened (for a new segment).
    func adopt(_ descriptor: Int32) {
        fd = descriptor
    }

    func close(_ fileSystem: FileSystem) {
        if fd >= 0 { fileSystem.closeFile(fd) }
        fd = -1
    }

    /// Notes a record at `offset`; adds an index entry when the interval has passed.
    func noteRecord(seq: UInt64, offset: Int, indexIntervalBytes: Int) {
        lastSeq = seq
        if let last = indexOffsets.last, offset - last < indexIntervalBytes { return }
        indexSeqs.append(seq)
        indexOffsets.append(offset)
    }

    /// Forgets records after `seq` (nil: all), after a rollback or a recovery truncation.
    func forget(after seq: UInt64?) {
        guard let seq, seq >= firstSeq else {
            lastSeq = nil
            indexSeqs.removeAll()
            indexOffsets.removeAll()
            return
        }
        if let last = lastSeq, last > seq { lastSeq = seq }
        while let last = indexSeqs.last, last > seq {
            indexSeqs.removeLast()
            indexOffsets.removeLast()
        }
    }

    /// The file offset from which scanning finds `seq`: the last index entry at or before it.
    func offset(scanningFor seq: UInt64) -> Int {
        var low = 0
        var high = indexSeqs.count
        while low < high {
            let mid = (low + high) / 2
            if indexSeqs[mid] <= seq { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? LogFormat.segmentHeaderSize : indexOffsets[low - 1]
    }

    /// Approximate memory held by the index.
    var indexBytes: Int { indexSeqs.capacity * 8 + indexOffsets.capacity * 8 }

    deinit {
        if fd >= 0 { closeDescriptor(fd) }
    }
}
