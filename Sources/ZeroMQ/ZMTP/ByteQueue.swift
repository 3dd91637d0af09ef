/// Bytes appended at the back and consumed from the front: a ZMTP connection's inbound and
/// outbound buffers.
///
/// Consumed bytes are dropped lazily, at the next append (all at once when everything was
/// consumed, else when they are most of the buffer), so slices handed out after a consume stay
/// valid without a copy until then.
struct ByteQueue {
    private var storage: [UInt8] = []
    private var head = 0

    /// The number of bytes not yet consumed.
    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }

    /// The byte `offset` places past the front.
    subscript(offset: Int) -> UInt8 { storage[head + offset] }

    /// The bytes at `offsets` from the front, without copying.
    subscript(offsets: Range<Int>) -> ArraySlice<UInt8> {
        storage[(head + offsets.lowerBound)..<(head + offsets.upperBound)]
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        storage.append(contentsOf: bytes)
    }

    mutating func append(contentsOf bytes: some Collection<UInt8>) {
        compact()
        storage.append(contentsOf: bytes)
    }

    mutating func append(_ byte: UInt8) {
        compact()
        storage.append(byte)
    }

    /// Drops `count` bytes from the front.
    mutating func consume(_ count: Int) {
        head += min(count, self.count)
    }

    /// Calls `body` with the unconsumed bytes.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[head...])) }
    }

    private mutating func compact() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1 << 16, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}
