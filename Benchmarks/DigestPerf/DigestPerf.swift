import Crypto
@_spi(Benchmarks) import FlowKitCore
import Foundation

/// Where a state digest's time goes, and FlowKit's SHA-256 against swift-crypto's (BoringSSL):
///
///     swift run -c release digest-perf [rounds]
///
/// For each size: a digest of bytes by FlowKit's `SHA256` and by swift-crypto's `SHA256`, in
/// nanoseconds per digest and MB/s; then `StateDigest(of:)` of a counter-sized and a todo-list
/// state, split into the canonical encoding and the hash. Rounds alternate between the two
/// hashes, and each figure is the median of 5 passes.
@main
struct DigestPerf {
    struct Counter: Encodable { var count = 42 }
    struct Todos: Encodable {
        struct Todo: Encodable { var id = UUID(); var title = "buy milk and bread"; var done = false }
        var todos = Array(repeating: Todo(), count: 20)
    }

    static func main() throws {
        let rounds = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 200_000
        print("bytes  FlowKit ns  swift-crypto ns  FlowKit MB/s  swift-crypto MB/s  ratio")
        for size in [32, 128, 512, 4_096, 65_536] {
            let bytes = (0..<size).map { UInt8($0 % 251) }
            precondition(FlowKitCore.SHA256.hash(bytes) == Array(Crypto.SHA256.hash(data: bytes)), "the two disagree at \(size) bytes")
            let count = max(100, rounds * 32 / size)
            var own: [Double] = []
            var crypto: [Double] = []
            for _ in 0..<5 {
                own.append(nanoseconds(count) { _ = FlowKitCore.SHA256.hash(bytes) })
                crypto.append(nanoseconds(count) { _ = Crypto.SHA256.hash(data: bytes) })
            }
            let (a, b) = (median(own), median(crypto))
            print(String(format: "%5d  %10.0f  %15.0f  %12.0f  %17.0f  %5.2f", size, a, b, Double(size) * 1_000 / a, Double(size) * 1_000 / b, a / b))
        }
        print("\nstate      encoded bytes  encode ns  FlowKit hash ns  swift-crypto hash ns  StateDigest(of:) ns")
        try state("counter", Counter(), rounds: rounds)
        try state("20 todos", Todos(), rounds: rounds / 20)
    }

    static func state(_ name: String, _ value: some Encodable, rounds: Int) throws {
        let encoded = try CanonicalEncoding.bytes(of: value)
        var encode: [Double] = [], own: [Double] = [], crypto: [Double] = [], digest: [Double] = []
        for _ in 0..<5 {
            encode.append(nanoseconds(rounds) { _ = try? CanonicalEncoding.bytes(of: value) })
            own.append(nanoseconds(rounds) { _ = FlowKitCore.SHA256.hash(encoded) })
            crypto.append(nanoseconds(rounds) { _ = Crypto.SHA256.hash(data: encoded) })
            digest.append(nanoseconds(rounds) { _ = try? StateDigest(of: value) })
        }
        print(
            String(
                format: "%-9@  %13d  %9.0f  %15.0f  %20.0f  %19.0f", name as NSString, encoded.count, median(encode), median(own), median(crypto),
                median(digest)
            )
        )
    }

    static func nanoseconds(_ count: Int, _ body: () -> Void) -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count { body() }
        let elapsed = start.duration(to: .now)
        return (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(count)
    }

    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
}
