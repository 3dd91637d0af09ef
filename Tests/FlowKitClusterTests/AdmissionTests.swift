@_spi(Wire) @testable import FlowKitCluster
import FlowKitExamples
import FlowKitTools
import Testing

/// The one admission rule, at both walls: what a node decodes from a client's EMIT or CANCEL and
/// what the coordinator decodes from a SUBMIT go through the same decoders and the same
/// ``Admission``, and come out the same: admitted alike, or refused with the same code and message.
@Suite struct AdmissionTests {
    static let limits = AdmissionLimits(maxEventBytes: 64)

    static var registry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        registry.register(KeyValueFlow.self, as: "kv")
        registry.register(LoadFlow.self, as: "load", codec: .binary)
        return registry
    }

    /// One submission's content, as both walls receive it.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var kind: EntryKind
        var codec: UInt8 = 1
        var address: String
        var payload: [UInt8] = []
        /// The refusal expected at both walls; `nil` when both admit it.
        var refusal: ProtocolError.Code?

        var testDescription: String { name }

        /// The client request a node receives: an EMIT, or a CANCEL by id or of every effect.
        var nodeFrames: [[UInt8]] {
            var header: [UInt8] = [0x46, 0x4B, WireHeader.version]
            switch kind {
            case .event:
                header += [0x30] + Wire.u64(1) + [0, codec] + Wire.shortString(address)
                return [header, payload]
            default:
                header += [0x34] + Wire.u64(1) + [0, kind == .cancelAll ? 1 : 0] + Wire.shortString(address) + Wire.shortBytes(payload)
                return [header]
            }
        }

        /// The SUBMIT the coordinator receives from a node that skipped the node's own check.
        var submitFrames: [[UInt8]] {
            let version: UInt16 = kind == .event ? 1 : 0
            let record: [UInt8] = Wire.u64(1) + [kind.rawValue, codec] + Wire.u16(version) + Wire.u64(0) + Wire.u64(0) + Wire.shortString(address) + payload
            return [[0x46, 0x4B, WireHeader.version, 0x01] + Wire.u32(7) + Wire.u64(99), Wire.u32(UInt32(record.count)) + record]
        }
    }

    static let cases: [Case] = [
        Case(name: "an event", kind: .event, address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8)),
        Case(name: "an unknown flow", kind: .event, address: "nosuch/a", payload: Array(#"{"increment":{}}"#.utf8), refusal: .unknownFlow),
        Case(name: "an address without a key", kind: .event, address: "counter", payload: Array(#"{"increment":{}}"#.utf8), refusal: .malformed),
        Case(name: "a key of 201 bytes", kind: .event, address: "counter/" + String(repeating: "k", count: 201), refusal: .malformed),
        Case(name: "a control character in the key", kind: .event, address: "counter/a\u{7}", refusal: .malformed),
        Case(name: "an unknown event case", kind: .event, address: "counter/a", payload: Array(#"{"explode":{}}"#.utf8), refusal: .undecodableEvent),
        Case(name: "not JSON", kind: .event, address: "counter/a", payload: Array("nope".utf8), refusal: .undecodableEvent),
        Case(name: "an event at the limit", kind: .event, address: "kv/a", payload: kvEvent(bytes: 64)),
        Case(name: "an event one byte over", kind: .event, address: "kv/a", payload: kvEvent(bytes: 65), refusal: .oversize),
        Case(name: "binary to a JSON-only flow", kind: .event, codec: 2, address: "kv/a", payload: [1], refusal: .unsupportedCodec),
        Case(name: "an unknown codec", kind: .event, codec: 9, address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8), refusal: .unsupportedCodec),
        Case(name: "JSON to a binary flow", kind: .event, address: "load/a", payload: Array(#"{"tick":{"padding":[1,2,3]}}"#.utf8)),
        Case(name: "a cancel by id", kind: .cancel, address: "counter/a", payload: Array("timer".utf8)),
        Case(name: "a cancel to an unknown flow", kind: .cancel, address: "nosuch/a", payload: Array("timer".utf8), refusal: .unknownFlow),
        Case(name: "a cancel id that is not UTF-8", kind: .cancel, address: "counter/a", payload: [0xFF, 0xFE], refusal: .malformed),
        Case(name: "a cancel by an empty id", kind: .cancel, address: "counter/a", payload: [], refusal: .malformed),
        Case(name: "a cancel of every effect", kind: .cancelAll, address: "counter/a"),
        Case(name: "a cancel of every effect with an id", kind: .cancelAll, address: "counter/a", payload: Array("timer".utf8), refusal: .malformed),
        // Found by `flowkit fuzz`: two faults, refused for different ones at the two walls.
        Case(name: "a cancel of every effect with an id, to an unknown flow", kind: .cancelAll, address: "nosuch/a", payload: Array("timer".utf8), refusal: .malformed),
        Case(name: "a cancel id that is not UTF-8, at a bad address", kind: .cancel, address: "nosuch", payload: [0xFF], refusal: .malformed),
        Case(name: "an oversize event to an unknown flow", kind: .event, address: "nosuch/a", payload: kvEvent(bytes: 65), refusal: .oversize),
    ]

    static func kvEvent(bytes: Int) -> [UInt8] {
        let prefix = #"{"set":{"key":"k","value":""#
        let suffix = #""}}"#
        return Array((prefix + String(repeating: "x", count: bytes - prefix.utf8.count - suffix.utf8.count) + suffix).utf8)
    }

    /// What a wall makes of a message: the admitted submission, or the refusal.
    enum Outcome: Equatable {
        case admitted(Admission.Admitted)
        case refused(ProtocolError)
    }

    static func atTheNode(_ frames: [[UInt8]]) -> Outcome {
        let admission = Admission(registry: registry, limits: limits)
        do {
            guard let admitted = try admission.admit(try ClientRequest(frames: frames)) else { return .refused(ProtocolError(.internalError, "not a submission")) }
            return .admitted(admitted)
        } catch {
            return .refused(error as! ProtocolError)
        }
    }

    static func atTheCoordinator(_ frames: [[UInt8]]) -> Outcome {
        let admission = Admission(registry: registry, limits: limits)
        do {
            let message = try SubmitMessage(frames: frames)
            return .admitted(try admission.admit(message.submissions[0]))
        } catch {
            return .refused(error as! ProtocolError)
        }
    }

    @Test(arguments: cases)
    func bothWallsDecideAlike(_ example: Case) {
        let node = Self.atTheNode(example.nodeFrames)
        let coordinator = Self.atTheCoordinator(example.submitFrames)
        #expect(node == coordinator, "node: \(node); coordinator: \(coordinator)")
        switch (example.refusal, node) {
        case (nil, .admitted): break
        case (let code?, .refused(let error)):
            #expect(error.code == code, "\(error)")
            #expect(!error.message.isEmpty)
        default:
            Issue.record("expected \(example.refusal.map { "refused as \($0)" } ?? "admitted"); got \(node)")
        }
    }

    @Test func anUnknownEventCaseIsNamed() {
        guard case .refused(let error) = Self.atTheNode(Self.cases[5].nodeFrames) else {
            Issue.record("admitted")
            return
        }
        #expect(error.message.contains(#"no event case named "explode""#), "\(error.message)")
        #expect(!error.message.contains("Invalid number of keys"), "\(error.message)")
    }

    @Test func eventsAreOrderedInTheFlowsWireCodec() {
        guard case .admitted(let admitted) = Self.atTheCoordinator(Self.cases[11].submitFrames) else {
            Issue.record("refused")
            return
        }
        #expect(admitted.codec == .binary)
        #expect(admitted.payload != Self.cases[11].payload)
    }

    /// What only a SUBMIT can say (a node builds these fields itself) is refused at the
    /// coordinator, the last wall before the log.
    static let coordinatorOnly: [(String, [UInt8])] = {
        let address = Wire.shortString("counter/a")
        // submission, kind, codec, version, submitted-at, term, address, payload.
        func record(_ kind: UInt8, _ codec: UInt8, version: UInt16 = 0) -> [UInt8] {
            Wire.u64(1) + [kind, codec] + Wire.u16(version) + Wire.u64(0) + Wire.u64(0) + address
        }
        let kind4 = record(4, 1)
        let typed = record(2, 2)
        let cancelAllCodec2 = record(3, 2)
        let longID = record(2, 1) + [UInt8](repeating: 0x61, count: 65_536)
        return [
            ("kind 4, the coordinator's own", kind4), ("a cancel with codec 3", record(2, 3) + Array("timer".utf8)),
            ("an event without its flow's version", record(1, 1) + Array(#"{"increment":{}}"#.utf8)),
            ("a typed cancel without a type", typed + Wire.shortString("") + Array("timer".utf8)),
            ("a typed cancel whose type runs past the payload", typed + Wire.u16(50) + Array("timer".utf8)),
            ("a typed cancel without a text", typed + Wire.shortString("M.CancelID")),
            ("a typed cancel whose text is not UTF-8", typed + Wire.shortString("M.CancelID") + [0xFF]),
            ("a typed cancel whose type is not UTF-8", typed + Wire.shortBytes([0xC3]) + Array("timer".utf8)),
            ("a cancel of every effect with codec 2", cancelAllCodec2), ("a cancel id of 65,536 bytes", longID),
            ("a typed cancel id of 65,536 bytes", typed + Wire.shortString("M.CancelID") + [UInt8](repeating: 0x61, count: 65_536)),
        ]
    }()

    /// A flow's own cancel from inside running work names the id's type and text (codec 2); only a
    /// node builds one, so only the coordinator's wall sees it.
    @Test func typedCancelsAreAdmittedAtTheCoordinator() throws {
        let target = CancelTarget.typed(type: "MyApp.TimerFlow.CancelID", description: "timer")
        let record: [UInt8] = Wire.u64(1) + [2, 2] + Wire.u16(0) + Wire.u64(0) + Wire.u64(0) + Wire.shortString("counter/a") + target.payload
        let frames = [[0x46, 0x4B, WireHeader.version, 0x01] + Wire.u32(7) + Wire.u64(99), Wire.u32(UInt32(record.count)) + record]
        guard case .admitted(let admitted) = Self.atTheCoordinator(frames) else {
            Issue.record("refused: \(Self.atTheCoordinator(frames))")
            return
        }
        #expect(admitted.codec == .binary && admitted.payload == target.payload)
        #expect(try CancelTarget(codec: admitted.codec, payload: admitted.payload) == target)
        #expect(try CancelTarget(codec: .json, payload: Array("timer".utf8)) == .described("timer"))
    }

    /// An event written by a newer version of its flow than the coordinator's build reads is not
    /// ordered: the coordinator could neither check it nor apply it. The node retries it once the
    /// coordinators are upgraded.
    @Test func anEventOfANewerVersionIsRefusedUntilTheCoordinatorReadsIt() {
        let event = Array(#"{"increment":{}}"#.utf8)
        func submit(version: UInt16) -> [[UInt8]] {
            let record: [UInt8] = Wire.u64(1) + [1, 1] + Wire.u16(version) + Wire.u64(0) + Wire.u64(0) + Wire.shortString("counter/a") + event
            return [[0x46, 0x4B, WireHeader.version, 0x01] + Wire.u32(7) + Wire.u64(99), Wire.u32(UInt32(record.count)) + record]
        }
        guard case .refused(let error) = Self.atTheCoordinator(submit(version: 2)) else {
            Issue.record("an event of version 2 was admitted by a build that reads version 1")
            return
        }
        #expect(error.code == .versionUnreadable)
        #expect(error.message.contains(#"flow "counter" at version 2"#) && error.message.contains("up to version 1"), "\(error.message)")
        guard case .admitted(let admitted) = Self.atTheCoordinator(submit(version: 1)) else {
            Issue.record("an event of version 1 was refused")
            return
        }
        #expect(admitted.version == 1)
    }

    @Test(arguments: coordinatorOnly)
    func submissionsNoNodeSendsAreRefused(_ name: String, _ record: [UInt8]) {
        let frames = [[0x46, 0x4B, WireHeader.version, 0x01] + Wire.u32(7) + Wire.u64(99), Wire.u32(UInt32(record.count)) + record]
        guard case .refused(let error) = Self.atTheCoordinator(frames) else {
            Issue.record("\(name) was admitted")
            return
        }
        let expected: Set<ProtocolError.Code> = [.malformed, .unsupportedCodec, .oversize, .truncated]
        #expect(expected.contains(error.code), "\(name): \(error)")
    }

    static let malformedSubmits: [(String, [[UInt8]])] = {
        let header: [UInt8] = [0x46, 0x4B, WireHeader.version, 0x01] + Wire.u32(7) + Wire.u64(99)
        let origin0: [UInt8] = [0x46, 0x4B, WireHeader.version, 0x01] + Wire.u32(0) + Wire.u64(99)
        let submission0: [UInt8] = Wire.u32(UInt32(validRecord.count - 4)) + [UInt8](repeating: 0, count: 8) + Array(validRecord.dropFirst(12))
        return [
            ("origin 0", [origin0, validRecord]),
            ("trailing bytes after the header", [header + [0], validRecord]),
            ("submission id 0", [header, submission0]),
        ]
    }()

    @Test(arguments: malformedSubmits)
    func malformedSubmitMessagesAreRefused(_ name: String, _ frames: [[UInt8]]) {
        #expect(throws: ProtocolError.self, "\(name)") { try SubmitMessage(frames: frames) }
        // The same frames with the fault undone decode.
        #expect(throws: Never.self) { try SubmitMessage(frames: [[0x46, 0x4B, WireHeader.version, 0x01] + Wire.u32(7) + Wire.u64(99), Self.validRecord]) }
    }

    static let validRecord: [UInt8] = {
        let record = Wire.u64(1) + [1, 1] + Wire.u16(1) + Wire.u64(0) + Wire.u64(0) + Wire.shortString("counter/a") + Array(#"{"increment":{}}"#.utf8)
        return Wire.u32(UInt32(record.count)) + record
    }()

    static let malformedRequests: [(String, [UInt8])] = {
        let address = Wire.shortString("counter/a")
        let all2: [UInt8] = Wire.u64(1) + [0, 2] + address + Wire.shortString("")
        let all1WithID: [UInt8] = Wire.u64(1) + [0, 1] + address + Wire.shortString("timer")
        let trailing: [UInt8] = Wire.u64(1) + [0, 0] + address + Wire.shortString("timer") + [0]
        let wait2: [UInt8] = Wire.u64(1) + [2, 1] + address
        return [
            ("CANCEL with all = 2", all2), ("CANCEL with all = 1 and an id", all1WithID),
            ("CANCEL with trailing bytes", trailing), ("EMIT with wait = 2", wait2),
        ]
    }()

    @Test(arguments: malformedRequests)
    func malformedClientRequestsAreRefused(_ name: String, _ body: [UInt8]) {
        let type: UInt8 = name.hasPrefix("EMIT") ? 0x30 : 0x34
        var frames = [[0x46, 0x4B, WireHeader.version, type] + body]
        if type == 0x30 { frames.append(Array(#"{"increment":{}}"#.utf8)) }
        let error = #expect(throws: ProtocolError.self, "\(name)") { try ClientRequest(frames: frames) }
        #expect(error?.code == .malformed, "\(name): \(String(describing: error))")
    }

    @Test func theLimitsAreDerivedFromTheFrameLimit() throws {
        let transport = TransportOptions()
        let ceiling = AdmissionLimits.eventCeiling(frameLimit: transport.maxMessageBytes)
        // The largest event at the longest address: its entry fits one records frame.
        let entry = Entry(
            seq: .max, epoch: .max, kind: .event, codec: .json, origin: .max, session: .max, submission: .max, submittedAt: .max,
            committedAt: .max, address: "f/" + String(repeating: "k", count: Address.maxBytes - 2), payload: [UInt8](repeating: 0, count: ceiling)
        )
        #expect(4 + entry.encoded.count == Int(transport.maxMessageBytes))
        try AdmissionLimits(maxEventBytes: ceiling).validate(against: transport)
        #expect(throws: ConfigurationError.self) { try AdmissionLimits(maxEventBytes: ceiling + 1).validate(against: transport) }
        #expect(throws: ConfigurationError.self) { try AdmissionLimits(maxEventBytes: 0).validate(against: transport) }
        try AdmissionLimits().validate(against: transport)
    }

    /// The walls check a plain address in place (``Address/plainFlowName(of:)``) and parse anything
    /// else in full. The quick check must never pass what parsing refuses, must name the same flow,
    /// and should pass the addresses clients actually send.
    @Test func theQuickAddressCheckPassesNothingParsingRefuses() throws {
        let plain = ["counter/a", "load/run-7", "a/b", "flow_name-2/k/with/slashes", "f/" + String(repeating: "k", count: 200),
                     String(repeating: "f", count: 48) + "/k", "kv/key with spaces ~!"]
        for address in plain {
            let name = try #require(Address.plainFlowName(of: address), "\(address)")
            #expect(String(name) == (try Address(parsing: address)).flow, "\(address)")
        }
        let others = ["", "/", "counter", "counter/", "/key", "Counter/a", "co unter/a", "counter/a\u{7}", "counter/a\u{7F}",
                      "counter/\u{85}", "counter/é", "counter/🙂", "f/" + String(repeating: "k", count: 201),
                      String(repeating: "f", count: 49) + "/k", "fl.ow/k"]
        for address in others {
            let name = Address.plainFlowName(of: address)
            // Either parsing refuses it too, or it is valid but not plain (non-ASCII keys): then
            // the quick check leaves it to parsing and says nothing.
            if let name { #expect(String(name) == (try? Address(parsing: address))?.flow, "\(address)") }
        }
        #expect(others.allSatisfy { Address.plainFlowName(of: $0) == nil })
        // Valid but not plain: still admitted, through parsing.
        let admission = Admission(registry: Self.registry, limits: Self.limits)
        let admitted = try admission.admit(kind: .event, codec: .json, address: "counter/é", payload: Array(#"{"increment":{}}"#.utf8))
        #expect(admitted.address == "counter/é")
    }
}

/// Builders for raw protocol fields.
enum Wire {
    static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }
    static func u64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }
    static func shortString(_ text: String) -> [UInt8] { shortBytes(Array(text.utf8)) }
    static func shortBytes(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes }
}
