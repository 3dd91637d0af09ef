import FlowKitCore
@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import Foundation
import FuzzDriver

/// Every decoder a FlowKit process runs on bytes from the network, each with a round-trip check:
/// whatever decodes must encode and decode again to the same value. A trap, a sanitizer report or a
/// failed round trip is a finding.
enum Decoders {
    static let all: [(name: String, decode: @Sendable ([[UInt8]]) -> Void)] = [
        ("ClientRequest", { frames in roundTrip(frames, ClientRequest.init(frames:), \.frames) }),
        ("ClientReply", { frames in
            guard let reply = try? ClientReply(frames: frames) else { return }
            // An ERROR's message is cut to 4,000 bytes when encoded: not a round trip.
            if case .error(_, let error) = reply, error.message.utf8.count > 4_000 { return }
            check(reply, try? ClientReply(frames: reply.frames), "ClientReply")
        }),
        ("SubmitMessage", { frames in roundTrip(frames, SubmitMessage.init(frames:), \.frames) }),
        ("AckMessage", { frames in roundTrip(frames, AckMessage.init(frames:), \.frames) }),
        ("HelloMessage", { frames in roundTrip(frames, HelloMessage.init(frames:), \.frames) }),
        ("WelcomeMessage", { frames in roundTrip(frames, WelcomeMessage.init(frames:), \.frames) }),
        ("NodeReportMessage", { frames in roundTrip(frames, NodeReportMessage.init(frames:), \.frames) }),
        ("EntriesMessage", { frames in roundTrip(frames, EntriesMessage.init(frames:), \.frames) }),
        ("HeartbeatMessage", { frames in roundTrip(frames, HeartbeatMessage.init(frames:), \.frames) }),
        ("ClusterStatusMessage", { frames in roundTrip(frames, ClusterStatusMessage.init(frames:), \.frames) }),
        ("AlarmMessage", { frames in roundTrip(frames, AlarmMessage.init(frames:), \.frames) }),
        ("SyncRequest", { frames in
            guard let request = try? SyncRequest(frames: frames) else { return }
            switch request {
            case .range(let range): check(request, try? SyncRequest(frames: range.frames), "SyncRequest")
            case .snapshot(let snapshot): check(request, try? SyncRequest(frames: snapshot.frames), "SyncRequest")
            case .fetch(let fetch): check(request, try? SyncRequest(frames: fetch.frames), "SyncRequest")
            }
        }),
        ("FetchedMessage", { frames in roundTrip(frames, FetchedMessage.init(frames:), \.frames) }),
        ("NotLeaderMessage", { frames in roundTrip(frames, NotLeaderMessage.init(frames:), \.frames) }),
        ("RangeMessage", { frames in roundTrip(frames, RangeMessage.init(frames:), \.frames) }),
        ("SnapshotChunkMessage", { frames in roundTrip(frames, SnapshotChunkMessage.init(frames:), \.frames) }),
        ("ErrorReply", { frames in
            guard let reply = try? ErrorReply(frames: frames), reply.error.message.utf8.count <= 4_000 else { return }
            check(reply, try? ErrorReply(frames: reply.frames), "ErrorReply")
        }),
        ("Entry", { frames in
            guard let entry = try? Entry(decoding: frames[0]) else { return }
            check(entry, try? Entry(decoding: entry.encoded), "Entry")
        }),
        ("Address", { frames in
            guard let text = String(validating: frames[0], as: UTF8.self), let address = try? Address(parsing: text) else { return }
            check(address, try? Address(parsing: address.description), "Address")
        }),
        ("LoadFlow.Event (binary codec)", { frames in
            guard let event = try? LoadFlow.Event(binaryEncoded: frames[0]) else { return }
            check(event, try? LoadFlow.Event(binaryEncoded: event.binaryEncoded()), "LoadFlow.Event")
        }),
        ("event JSON (counter, kv, ledger)", { frames in
            // What a node does with an EMIT payload before it is ordered.
            let data = Data(frames[0])
            _ = try? JSONDecoder().decode(CounterFlow.Event.self, from: data)
            _ = try? JSONDecoder().decode(KeyValueFlow.Event.self, from: data)
            if let event = try? JSONDecoder().decode(LedgerFlow.Event.self, from: data) {
                check(event, try? JSONDecoder().decode(LedgerFlow.Event.self, from: JSONEncoder().encode(event)), "LedgerFlow.Event")
            }
        }),
    ]

    static func roundTrip<T: Equatable>(_ frames: [[UInt8]], _ decode: ([[UInt8]]) throws -> T, _ encode: (T) -> [[UInt8]]) {
        guard let value = try? decode(frames) else { return }
        check(value, try? decode(encode(value)), "\(T.self)")
    }

    static func check<T: Equatable>(_ value: T, _ again: T?, _ name: String) {
        guard let again, again == value else {
            fatalError("\(name) does not survive a round trip: \(value) encodes to something that decodes to \(String(describing: again))")
        }
    }
}

/// libFuzzer's entry point: one input, one decoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    Decoders.all[input.decoder % Decoders.all.count].decode(input.frames)
    return 0
}

/// With `FLOWKIT_FUZZ_SEEDS=<dir>`, writes a seed corpus of valid messages for every decoder and
/// exits: `scripts/fuzz decoders` starts libFuzzer from it.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    if let directory = ProcessInfo.processInfo.environment["FLOWKIT_FUZZ_SEEDS"] {
        Seeds.write(to: directory)
        exit(0)
    }
    return 0
}

/// The executable's entry point (SwiftPM names an executable target's `main` `<target>_main`):
/// hands the command line to libFuzzer's driver.
@_cdecl("FuzzDecoders_main")
public func fuzzDecodersMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    LibFuzzer.run(argc, argv, fuzzOneInput)
}
