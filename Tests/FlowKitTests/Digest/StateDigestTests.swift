import FlowKit
@_spi(Benchmarks) import FlowKitCore
import Foundation
import Testing

@Suite struct StateDigestTests {
    struct Sample: Codable, Equatable {
        var name: String
        var tags: Set<String>
        var scores: [Int: Double]
        var nested: [String: [Int]]
        var optional: Int?
    }

    private func sample(order: [Int]) -> Sample {
        var sample = Sample(name: "room-42", tags: [], scores: [:], nested: [:], optional: nil)
        for index in order {
            sample.tags.insert("tag\(index)")
            sample.scores[index] = Double(index) / 3
            sample.nested["k\(index)"] = [index, index * 2]
        }
        return sample
    }

    @Test func equalValuesBuiltInDifferentOrdersHaveEqualDigests() throws {
        let forward = sample(order: Array(0..<200))
        let backward = sample(order: (0..<200).reversed())
        #expect(forward == backward)
        #expect(try StateDigest(of: forward) == StateDigest(of: backward))
    }

    @Test func anyDifferenceChangesTheDigest() throws {
        let base = sample(order: Array(0..<10))
        var changed = base
        changed.scores[3] = 99
        var renamed = base
        renamed.name = "room-43"
        var optional = base
        optional.optional = 0
        let digests = try [base, changed, renamed, optional].map(StateDigest.init(of:))
        #expect(Set(digests).count == 4)
    }

    @Test func kindsAreDistinguished() throws {
        #expect(try StateDigest(of: [1]) != StateDigest(of: ["1"]))
        #expect(try StateDigest(of: [[1], [2]]) != StateDigest(of: [[1, 2]]))
        #expect(try StateDigest(of: ["ab", "c"]) != StateDigest(of: ["a", "bc"]))
    }

    @Test func signedZeroAndNaNAreNormalised() throws {
        #expect(try StateDigest(of: [0.0]) == StateDigest(of: [-0.0]))
        #expect(try StateDigest(of: [Double.nan]) == StateDigest(of: [-Double.nan]))
    }

    /// The digest must not change between runs, processes or releases, or nodes of different
    /// versions would report a divergence. These values were computed outside Swift, by a short
    /// Python script that follows the byte layout documented on `CanonicalEncoding`:
    /// `hashlib.sha256(bytes([3]) + struct.pack('<q', 42)).hexdigest()[:32]`, and likewise for the
    /// keyed sample with its sets and dictionaries.
    @Test func digestsMatchTheDocumentedLayoutComputedIndependently() throws {
        let fortyTwo = try StateDigest(of: 42).description
        #expect(fortyTwo == "db40d530a39f25b7c4cb009aade03fe5")
        let sample = try StateDigest(of: sample(order: [3, 1, 2])).description
        #expect(sample == "70585b6c06ebeb70d5001354ab26dd3d")
    }

    @Test func hexRoundTripsAndRejectsBadInput() throws {
        let digest = try StateDigest(of: "hello")
        #expect(StateDigest(hex: digest.description) == digest)
        #expect(StateDigest(hex: "xyz") == nil)
        #expect(StateDigest(hex: String(repeating: "g", count: 32)) == nil)
        #expect(StateDigest(hex: String(digest.description.dropLast())) == nil)
        #expect(StateDigest(hex: digest.description + "0") == nil)
        #expect(StateDigest(hex: digest.description.uppercased()) == digest)
        let json = try JSONEncoder().encode([digest])
        #expect(try JSONDecoder().decode([StateDigest].self, from: json) == [digest])
    }

    /// The 16 bytes are held as two words; what they read as, and what a combination hashes, is the
    /// bytes in order, most significant first.
    @Test func bytesAreTheDigestInOrder() throws {
        let digest = try StateDigest(of: 42)
        #expect(digest.bytes == [0xdb, 0x40, 0xd5, 0x30, 0xa3, 0x9f, 0x25, 0xb7, 0xc4, 0xcb, 0x00, 0x9a, 0xad, 0xe0, 0x3f, 0xe5])
        let parts = [(key: "counter/a", digest: digest), (key: "kv/ü", digest: try StateDigest(of: "x"))]
        var sha = SHA256()
        for part in parts {
            let length = UInt32(part.key.utf8.count)
            sha.update([UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)])
            sha.update(Array(part.key.utf8))
            sha.update(part.digest.bytes)
        }
        #expect(StateDigest(combining: parts).bytes == Array(sha.finalize().prefix(16)))
    }

    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func sha256MatchesTheStandardVectors(input: String, expected: String) {
        var sha = SHA256()
        sha.update(Array(input.utf8))
        let hex = sha.finalize().map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        #expect(hex == expected)
    }
}

extension StateDigestTests {
    /// Lengths around the padding's edges (55, 56, 63, 64, 65, 119, 120) and across blocks, hashed
    /// at once and fed in pieces of 1, 7 and 64 bytes: the same digest, the one Python's hashlib gives.
    @Test(arguments: [
        (55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"),
        (1000, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"),
    ])
    func sha256OfAnyLengthInAnyPieces(length: Int, expected: String) {
        let bytes = (0..<length).map { UInt8($0 % 251) }
        func hex(_ digest: [UInt8]) -> String { digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
        #expect(hex(SHA256.hash(bytes)) == expected)
        for piece in [1, 7, 64] {
            var sha = SHA256()
            for start in stride(from: 0, to: length, by: piece) { sha.update(Array(bytes[start..<min(length, start + piece)])) }
            #expect(hex(sha.finalize()) == expected, "in pieces of \(piece)")
        }
    }

    @Test func sha256OfAMillionAs() {
        let digest = SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
        #expect(digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
    /// Keys and snapshots are ordered by UTF-8 bytes: the fast comparison agrees with the generic
    /// one on prefixes, equal texts, the empty text, small and large strings, and non-ASCII.
    @Test func utf8OrderAgreesWithTheBytes() {
        var random = SystemRandomNumberGenerator()
        let pieces = ["", "a", "b", "ab", "abc", "é", "e\u{301}", "z", "Z", "😀", "counter/", "counter/room-1", "counter/room-10", "counter/room-2",
                      String(repeating: "x", count: 40), String(repeating: "x", count: 41), "ü" + String(repeating: "y", count: 30)]
        var texts = pieces
        for _ in 0..<300 {
            texts.append((0..<Int.random(in: 1...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined())
        }
        for lhs in texts {
            for rhs in texts {
                #expect(lhs.utf8Precedes(rhs) == lhs.utf8.lexicographicallyPrecedes(rhs.utf8), "\(lhs) vs \(rhs)")
            }
        }
        // The snapshots' sort (positions, from the bytes copied once) puts them in the same order.
        let bytes = texts.map { Array($0.utf8) }
        #expect(utf8Order(count: texts.count) { texts[$0] }.map { bytes[$0] } == bytes.sorted { $0.lexicographicallyPrecedes($1) })
        // So it does when they share their first bytes, which it leaves out of the comparison; one
        // is those bytes alone.
        let shared = ["load/abcdefgh-"] + texts.map { "load/abcdefgh-" + $0 }
        let sharedBytes = shared.map { Array($0.utf8) }
        let order = utf8Order(count: shared.count) { shared[$0] }
        #expect(order.map { sharedBytes[$0] } == sharedBytes.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(utf8Order(count: 0) { _ in "" }.isEmpty && utf8Order(count: 1) { _ in "" } == [0])
    }

    /// Past one run of 4,096 texts the sort merges its runs, calling its check between steps: the
    /// same order (duplicates, prefixes and a shared start included), a check at least every 4,096
    /// texts handled in each pass, and a check that throws stops it.
    @Test func aSortOfManyMergesItsRunsAndChecksBetweenSteps() {
        var random = SystemRandomNumberGenerator()
        var texts = (0..<20_000).map { _ in "load/run-" + String(UInt64.random(in: 0...UInt64.max, using: &random), radix: 36) }
        texts += texts.prefix(100).map { $0 } + texts.prefix(100).map { String($0.dropLast()) } + ["load/run-"]
        texts.shuffle(using: &random)
        let bytes = texts.map { Array($0.utf8) }
        var checks = 0
        let order = utf8Order(count: texts.count, checking: { checks += 1 }) { position, buffer in buffer.append(contentsOf: texts[position].utf8) }
        #expect(order.map { bytes[$0] } == bytes.sorted { $0.lexicographicallyPrecedes($1) })
        // Copying the texts, the runs, and 3 passes of merges (4,096 → 32,768): each ≥ 4 checks.
        #expect(checks >= 4 * 5)

        struct Stop: Error {}
        var calls = 0
        #expect(throws: Stop.self) {
            _ = try utf8Order(count: texts.count, checking: {
                calls += 1
                if calls == 12 { throw Stop() }
            }) { position, buffer in buffer.append(contentsOf: texts[position].utf8) }
        }
        #expect(calls == 12)
    }
}
