@_spi(Wire) import FlowKitCluster
import Foundation

/// A bare test socket that sends and receives frames: ``RawDealer`` and ``ProbeSocket``.
protocol FrameSocket: Sendable {
    func send(_ frames: [[UInt8]]) async throws
    func receive(timeout: Duration) async throws -> [[UInt8]]?
}

extension RawDealer: FrameSocket {}
extension ProbeSocket: FrameSocket {}

extension FrameSocket {
    /// Says HELLO to a coordinator's submit socket as node `node`, process `session`, and waits
    /// for the answer (a WELCOME, or a standby's NOT_LEADER): from then on this connection speaks
    /// for that node, as a node's own connection does (docs/SECURITY.md, "Node identity").
    @discardableResult
    func sayHello(node: UInt32, session: UInt64, timeout: Duration = .seconds(10)) async throws -> [[UInt8]] {
        let info = NodeInfo(name: "raw-node-\(node)", clientEndpoint: "tcp://127.0.0.1:1", flows: [], pid: getpid())
        try await send(HelloMessage(node: node, session: session, info: info).frames)
        guard let answer = try await receive(timeout: timeout) else {
            throw HarnessError("no answer to a HELLO as node \(node) within \(timeout)")
        }
        return answer
    }
}
