@_spi(Wire) import FlowKitCluster

/// Makes the malformed, random, truncated, oversize and wrong-version messages `flowkit fuzz`
/// sends, from a target's valid templates and a seeded generator.
struct FuzzMutator: Sendable {
    /// How a message was made: the fuzz report counts sends by strategy.
    enum Strategy: String, CaseIterable, Codable, Sendable {
        case random
        case randomAfterHeader = "random-after-header"
        case truncated
        case badMagic = "bad-magic"
        case wrongVersion = "wrong-version"
        case wrongType = "wrong-type"
        case frameCount = "frame-count"
        case bitFlip = "bit-flip"
        case fieldSmash = "field-smash"
        case splice
        case oversize
        case valid
    }

    let templates: [FuzzTemplates.Template]
    /// The size of an oversize frame: above the node's 1 MiB event limit, below the transport's
    /// 64 MiB (which libzmq enforces by dropping the connection, with nothing to count).
    let oversizeBytes: Int
    private let totalWeight: Int

    init(templates: [FuzzTemplates.Template], oversizeBytes: Int = (1 << 20) + 4_096) {
        self.templates = templates
        self.oversizeBytes = oversizeBytes
        totalWeight = templates.reduce(0) { $0 + $1.weight }
    }

    /// The strategies and how often each is drawn (out of 1,000); oversize messages are rare, as
    /// every one costs a megabyte.
    private static let weights: [(Strategy, Int)] = [
        (.random, 110), (.randomAfterHeader, 110), (.truncated, 120), (.badMagic, 50), (.wrongVersion, 60),
        (.wrongType, 80), (.frameCount, 100), (.bitFlip, 180), (.fieldSmash, 120), (.splice, 50), (.oversize, 2), (.valid, 18),
    ]

    func next(_ random: inout SeededRandom) -> (Strategy, [[UInt8]]) {
        var pick = Int.random(in: 0..<Self.weights.reduce(0) { $0 + $1.1 }, using: &random)
        var strategy = Strategy.random
        for (candidate, weight) in Self.weights {
            if pick < weight {
                strategy = candidate
                break
            }
            pick -= weight
        }
        return (strategy, make(strategy, &random))
    }

    private func template(_ random: inout SeededRandom) -> [[UInt8]] {
        var pick = Int.random(in: 0..<max(totalWeight, 1), using: &random)
        for template in templates {
            if pick < template.weight { return template.frames }
            pick -= template.weight
        }
        return templates.first?.frames ?? [[0x46, 0x4B, WireHeader.version, 0]]
    }

    func make(_ strategy: Strategy, _ random: inout SeededRandom) -> [[UInt8]] {
        var frames = template(&random)
        let index = Int.random(in: 0..<frames.count, using: &random)
        switch strategy {
        case .random:
            return (0..<Int.random(in: 1...3, using: &random)).map { _ in random.bytes(Int.random(in: 0...300, using: &random)) }
        case .randomAfterHeader:
            let type = frames[0].count > 3 && Bool.random(using: &random) ? frames[0][3] : UInt8.random(in: 0...255, using: &random)
            frames[0] = [0x46, 0x4B, WireHeader.version, type] + random.bytes(Int.random(in: 0...64, using: &random))
        case .truncated:
            frames[index] = Array(frames[index].prefix(Int.random(in: 0...max(frames[index].count - 1, 0), using: &random)))
        case .badMagic:
            if frames[0].count >= 2 { frames[0][Int.random(in: 0...1, using: &random)] ^= UInt8.random(in: 1...255, using: &random) }
        case .wrongVersion:
            if frames[0].count >= 3 { frames[0][2] = [0, 2, 3, 0x7F, 0xFF].randomElement(using: &random)! }
        case .wrongType:
            if frames[0].count >= 4 { frames[0][3] = UInt8.random(in: 0...255, using: &random) }
        case .frameCount:
            if frames.count > 1, Bool.random(using: &random) {
                frames.remove(at: index)
            } else {
                frames.insert(random.bytes(Int.random(in: 0...32, using: &random)), at: Int.random(in: 0...frames.count, using: &random))
            }
        case .bitFlip:
            for _ in 0..<Int.random(in: 1...8, using: &random) where !frames[index].isEmpty {
                frames[index][Int.random(in: 0..<frames[index].count, using: &random)] ^= 1 << UInt8.random(in: 0...7, using: &random)
            }
        case .fieldSmash:
            // Extreme values where lengths, counts, seqs and enum bytes live.
            let width = [1, 2, 4, 8].randomElement(using: &random)!
            guard frames[index].count >= width else { break }
            let at = Int.random(in: 0...(frames[index].count - width), using: &random)
            let value: UInt8 = [0x00, 0xFF, 0x7F, 0x80].randomElement(using: &random)!
            for offset in 0..<width { frames[index][at + offset] = value }
        case .splice:
            let other = template(&random)
            let otherIndex = Int.random(in: 0..<other.count, using: &random)
            let cut = Int.random(in: 0...frames[index].count, using: &random)
            let otherCut = Int.random(in: 0...other[otherIndex].count, using: &random)
            frames[index] = Array(frames[index].prefix(cut)) + Array(other[otherIndex].dropFirst(otherCut))
        case .oversize:
            if frames.count == 1, let kind = frames[0].first, kind <= 1 {
                // A long subscription. Kept at 16 KiB: libzmq's own XSUB frees its subscription
                // trie recursively and overflows its stack on megabyte topics (the coordinator's
                // side is probed with those by ``LongSubscriptionProbe``, from a child process).
                frames[0] = [1] + random.bytes(16 << 10)
            } else {
                frames[frames.count - 1] = [UInt8](repeating: 0x20, count: oversizeBytes)
            }
        case .valid:
            break
        }
        return frames
    }
}
