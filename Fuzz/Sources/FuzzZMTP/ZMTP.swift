import Foundation
import FuzzDriver
@_spi(Fuzzing) import ZeroMQ

/// How a fuzz input drives the ZMTP engine. Byte 0 picks what is parsed:
///
/// * 0, a session: byte 1 picks the socket type (``ZMTPFuzzing/socketTypes``), byte 2 the frame
///   limit (none, 64 bytes, 1 MiB, 64 MiB), byte 3 how many pieces the stream arrives in (at most
///   8), the next bytes where each piece ends (a byte each, added up); the rest is the stream;
/// * 1, a greeting: the rest;
/// * 2, a command frame's body: the rest.
struct ZMTPInput {
    static let limits: [Int?] = [nil, 64, 1 << 20, 64 << 20]

    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 1 else { return }
        switch bytes[0] % 3 {
        case 0:
            guard bytes.count >= 4 else { return }
            let type = ZMTPFuzzing.socketTypes[Int(bytes[1]) % ZMTPFuzzing.socketTypes.count]
            let limit = limits[Int(bytes[2]) % limits.count]
            let pieces = min(Int(bytes[3] % 8), bytes.count - 4)
            var cuts: [Int] = []
            var end = 0
            for byte in bytes[4..<(4 + pieces)] {
                end += Int(byte)
                cuts.append(end)
            }
            ZMTPFuzzing.session(socketType: type, maxMessageBytes: limit, bytes: Array(bytes[(4 + pieces)...]), cuts: cuts)
        case 1:
            ZMTPFuzzing.greeting(Array(bytes.dropFirst()))
        default:
            ZMTPFuzzing.command(Array(bytes.dropFirst()))
        }
    }

    /// Valid inputs of every kind: a well-behaved peer of each socket type (ZMTP 3.1 and 3.0),
    /// whole and in pieces; a greeting; each command.
    static func seeds() -> [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [:]
        for (index, type) in ZMTPFuzzing.socketTypes.enumerated() {
            for minor: UInt8 in [0, 1] {
                let stream = ZMTPFuzzing.validPeerBytes(for: type, minor: minor)
                seeds["session-\(type.name)-3.\(minor)"] = [0, UInt8(index), 3, 0] + stream
                seeds["session-\(type.name)-3.\(minor)-pieces"] = [0, UInt8(index), 2, 3, 10, 60, 7] + stream
            }
        }
        seeds["greeting"] = [1] + ZMTPFuzzing.validGreeting
        for (index, command) in ZMTPFuzzing.validCommands.enumerated() { seeds["command-\(index)"] = [2] + command }
        return seeds
    }
}

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    ZMTPInput.run(Array(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)))
    return 0
}

/// With `FLOWKIT_FUZZ_SEEDS=<dir>`, writes the seed corpus and exits: `scripts/fuzz zmtp` starts
/// libFuzzer from it.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    if let directory = ProcessInfo.processInfo.environment["FLOWKIT_FUZZ_SEEDS"] {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (name, bytes) in ZMTPInput.seeds() {
            FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(bytes))
        }
        exit(0)
    }
    return 0
}

/// The executable's entry point (SwiftPM names it `<target>_main`): hands over to libFuzzer.
@_cdecl("FuzzZMTP_main")
public func fuzzZMTPMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    LibFuzzer.run(argc, argv, fuzzOneInput)
}
