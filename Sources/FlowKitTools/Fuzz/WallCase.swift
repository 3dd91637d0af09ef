@_spi(Wire) import FlowKitCluster

/// One submission's content, sent to both walls by `flowkit fuzz`: to a node as the client request
/// that carries it (EMIT, or CANCEL), and to the coordinator as a SUBMIT from a node that skipped
/// its own check. Both must decide alike: admit it, or refuse it with the same code.
struct WallCase: Sendable {
    var name: String
    var kind: UInt8
    var codec: UInt8
    var address: [UInt8]
    var payload: [UInt8]
    /// Envelope faults only a SUBMIT can carry: a node refuses nothing of these, it builds them.
    var origin: UInt32 = WallCase.origin
    var submissionZero = false
    var trailingHeaderBytes = false

    /// The node id the fuzzer submits as.
    static let origin: UInt32 = 900

    /// Whether a client request can carry this content, so that the node's decision counts too.
    var reachesTheNode: Bool {
        guard origin != 0, !submissionZero, !trailingHeaderBytes, address.count <= Int(UInt16.max) else { return false }
        switch kind {
        case 1: return true
        case 2, 3: return codec == 1 && payload.count <= Int(UInt16.max)
        default: return false
        }
    }

    /// The EMIT or CANCEL a client sends a node for it.
    func nodeFrames(request: UInt64) -> [[UInt8]] {
        var header: [UInt8] = [0x46, 0x4B, WireHeader.version]
        if kind == 1 {
            header += [0x30] + Self.u64(request) + [0, codec] + Self.short(address)
            return [header, payload]
        }
        header += [0x34] + Self.u64(request) + [0, kind == 3 ? 1 : 0] + Self.short(address) + Self.short(payload)
        return [header]
    }

    /// The SUBMIT a node would send the coordinator for it.
    func submitFrames(session: UInt64, submission: UInt64) -> [[UInt8]] {
        var header: [UInt8] = [0x46, 0x4B, WireHeader.version, 0x01] + Self.u32(origin) + Self.u64(session)
        if trailingHeaderBytes { header.append(0) }
        // The version a node writes: its flow's (1, here) for an event, 0 for a cancel.
        let version: [UInt8] = [0, kind == EntryKind.event.rawValue ? 1 : 0]
        let record: [UInt8] = Self.u64(submissionZero ? 0 : submission) + [kind, codec] + version + Self.u64(1) + Self.u64(0) + Self.short(address) + payload
        return [header, Self.u32(UInt32(record.count)) + record]
    }

    static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
    static func u64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }
    static func short(_ bytes: [UInt8]) -> [UInt8] { [UInt8(truncatingIfNeeded: bytes.count >> 8), UInt8(truncatingIfNeeded: bytes.count)] + bytes }
}

/// The cases: every limit at its boundary, then random combinations of fields at their edges.
enum WallCases {
    /// A `kv` event of exactly `bytes` bytes of JSON.
    static func kvEvent(bytes: Int) -> [UInt8] {
        let prefix = Array(#"{"set":{"key":"k","value":""#.utf8)
        let suffix = Array(#""}}"#.utf8)
        return prefix + [UInt8](repeating: UInt8(ascii: "x"), count: max(0, bytes - prefix.count - suffix.count)) + suffix
    }

    static let increment = Array(#"{"increment":{}}"#.utf8)

    /// Every size limit at, below and above its edge, and every field the protocol constrains at
    /// its edges, each once.
    static func boundaries(maxEventBytes limit: Int, frameLimit: Int) -> [WallCase] {
        func event(_ name: String, at address: String = "kv/wall", codec: UInt8 = 1, _ payload: [UInt8]) -> WallCase {
            WallCase(name: name, kind: 1, codec: codec, address: Array(address.utf8), payload: payload)
        }
        func cancel(_ name: String, kind: UInt8 = 2, codec: UInt8 = 1, _ payload: [UInt8]) -> WallCase {
            WallCase(name: name, kind: kind, codec: codec, address: Array("timer/wall".utf8), payload: payload)
        }
        // The SUBMIT records frame of the wedge: 16 bytes under the frame limit.
        let wedge = frameLimit - 16 - 4 - 8 - 1 - 1 - 8 - 2 - "kv/wall".utf8.count
        var cases = [
            event("event of max-event-bytes - 1", kvEvent(bytes: limit - 1)),
            event("event of max-event-bytes", kvEvent(bytes: limit)),
            event("event of max-event-bytes + 1", kvEvent(bytes: limit + 1)),
            event("event of 1 MiB + 4 KiB", kvEvent(bytes: (1 << 20) + 4_096)),
            event("event of 5 MiB", kvEvent(bytes: 5 << 20)),
            event("event filling a SUBMIT frame to 16 bytes under the frame limit", kvEvent(bytes: wedge)),
            event("flow name of 48 bytes", at: String(repeating: "f", count: 48) + "/k", increment),
            event("flow name of 49 bytes", at: String(repeating: "f", count: 49) + "/k", increment),
            event("empty flow name", at: "/k", increment),
            event("upper-case flow name", at: "Counter/k", increment),
            event("key of 200 bytes", at: "counter/" + String(repeating: "k", count: 200), increment),
            event("key of 201 bytes", at: "counter/" + String(repeating: "k", count: 201), increment),
            event("empty key", at: "counter/", increment),
            event("no slash", at: "counter", increment),
            event("key with a C0 control", at: "counter/a\u{1}", increment),
            event("key with a C1 control", at: "counter/a\u{85}", increment),
            event("key with DEL", at: "counter/a\u{7F}", increment),
            WallCase(name: "address not UTF-8", kind: 1, codec: 1, address: Array("counter/".utf8) + [0xFF], payload: increment),
            event("codec 0", at: "counter/wall", codec: 0, increment),
            event("codec 3", at: "counter/wall", codec: 3, increment),
            event("codec 255", at: "counter/wall", codec: 255, increment),
            event("binary to a JSON-only flow", codec: 2, [1, 2, 3]),
            event("empty payload", at: "counter/wall", []),
            event("unknown event case", at: "counter/wall", Array(#"{"explode":{}}"#.utf8)),
            event("two keys", at: "counter/wall", Array(#"{"increment":{},"decrement":{}}"#.utf8)),
            event("JSON of the wrong type", at: "counter/wall", Array(#"{"add":{"_0":"five"}}"#.utf8)),
            cancel("cancel id of 1 byte", [UInt8(ascii: "t")]),
            cancel("cancel id of 65,535 bytes", [UInt8](repeating: UInt8(ascii: "t"), count: 65_535)),
            cancel("cancel id of 65,536 bytes", [UInt8](repeating: UInt8(ascii: "t"), count: 65_536)),
            cancel("empty cancel id", []),
            cancel("cancel id not UTF-8", [0xC3, 0x28]),
            cancel("cancel with codec 2", codec: 2, Array("timer".utf8)),
            cancel("cancel of every effect", kind: 3, []),
            cancel("cancel of every effect with an id", kind: 3, Array("timer".utf8)),
            cancel("cancel of every effect with codec 2", kind: 3, codec: 2, []),
            cancel("kind 0", kind: 0, []),
            cancel("kind 4 (quarantined)", kind: 4, [0, 0, 0, 0, 0, 0, 0, 1]),
            cancel("kind 5", kind: 5, []),
            cancel("kind 255", kind: 255, []),
        ]
        var origin0 = event("origin 0", at: "counter/wall", increment)
        origin0.origin = 0
        var submission0 = event("submission id 0", at: "counter/wall", increment)
        submission0.submissionZero = true
        var trailing = event("trailing bytes after the SUBMIT header", at: "counter/wall", increment)
        trailing.trailingHeaderBytes = true
        cases += [origin0, submission0, trailing]
        return cases
    }

    /// A case of random fields, each drawn from its edges.
    static func random(_ random: inout SeededRandom, maxEventBytes limit: Int) -> WallCase {
        let flows = ["counter", "kv", "timer", "load", "nosuch", "", "Counter", String(repeating: "f", count: 48), String(repeating: "f", count: 49), "a-b_c"]
        let keys: [[UInt8]] = [
            Array("a".utf8), [], Array(String(repeating: "k", count: 200).utf8), Array(String(repeating: "k", count: 201).utf8),
            Array("a/b".utf8), [0x61, 0x07], [0x61, 0xC2, 0x85], [0xFF], Array("é".utf8), [0x61, 0x7F],
        ]
        var address = Array(flows.randomElement(using: &random)!.utf8)
        if Int.random(in: 0..<10, using: &random) > 0 { address += [UInt8(ascii: "/")] + keys.randomElement(using: &random)! }
        let kind = [1, 1, 1, 1, 2, 2, 3, 3, 0, 4, 5, 255].randomElement(using: &random)! as UInt8
        let codec = [1, 1, 1, 1, 1, 2, 0, 3, 255].randomElement(using: &random)! as UInt8
        let payload: [UInt8]
        switch kind {
        case 1:
            let choices: [[UInt8]] = [
                increment, Array(#"{"add":{"_0":5}}"#.utf8), Array(#"{"set":{"key":"k","value":"v"}}"#.utf8),
                Array(#"{"explode":{}}"#.utf8), Array(#"{"a":{},"b":{}}"#.utf8), Array("not json".utf8), [], random.bytes(Int.random(in: 1...40, using: &random)),
                Array(#"{"toggleTimerButtonTapped":{}}"#.utf8), Array(#"{"tick":{"padding":[1,2]}}"#.utf8),
            ]
            // Sizes at the limit are rare: each costs a megabyte at both walls.
            payload = Int.random(in: 0..<50, using: &random) == 0
                ? kvEvent(bytes: limit + Int.random(in: -1...1, using: &random))
                : choices.randomElement(using: &random)!
        case 2:
            let choices: [[UInt8]] = [Array("timer".utf8), [], [0xFF, 0xFE], Array("é".utf8), [0], random.bytes(Int.random(in: 1...20, using: &random))]
            payload = choices.randomElement(using: &random)!
        default:
            payload = Int.random(in: 0..<3, using: &random) == 0 ? Array("timer".utf8) : []
        }
        var result = WallCase(name: "random", kind: kind, codec: codec, address: address, payload: payload)
        switch Int.random(in: 0..<40, using: &random) {
        case 0: result.origin = 0
        case 1: result.submissionZero = true
        case 2: result.trailingHeaderBytes = true
        default: break
        }
        return result
    }
}
