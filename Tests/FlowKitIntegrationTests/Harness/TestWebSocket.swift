import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A WebSocket client for the tests, on SwiftNIO's WebSocket codec: it opens `ws://` URLs, sends
/// text messages and reads them back whole. What the dashboard's `/live` and Chromium's DevTools
/// protocol need, and no more.
///
/// ```swift
/// let first = try await TestWebSocket.connect("ws://127.0.0.1:7480/live") { socket in
///     try await socket.receiveText()
/// }
/// ```
enum TestWebSocket {
    enum Failure: Error, CustomStringConvertible {
        case badURL(String)
        /// The server answered the upgrade request with something other than 101.
        case notUpgraded(String)
        case messageTooLarge(Int)

        var description: String {
            switch self {
            case .badURL(let url): "not a ws:// URL with a host and a port: \(url)"
            case .notUpgraded(let url): "\(url) did not switch to the WebSocket protocol"
            case .messageTooLarge(let limit): "a message larger than \(limit) bytes"
            }
        }
    }

    /// One open connection, for the length of the body given to ``TestWebSocket/connect(_:headers:maxMessageSize:_:)``.
    struct Connection {
        fileprivate var inbound: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator
        fileprivate let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>
        fileprivate let maxMessageSize: Int

        /// Sends `text` as one text message.
        func send(text: String) async throws {
            try await outbound.write(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(string: text)))
        }

        /// The next text message, its fragments joined; pings are answered and binary messages
        /// skipped on the way. `nil` once the server has closed the connection.
        mutating func receiveText() async throws -> String? {
            var text: ByteBuffer?
            while let frame = try await inbound.next() {
                var data = frame.unmaskedData
                switch frame.opcode {
                case .text:
                    text = data
                case .continuation where text != nil:
                    text!.writeBuffer(&data)
                case .ping:
                    try await outbound.write(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: data))
                    continue
                case .connectionClose:
                    return nil
                default:
                    continue
                }
                if let size = text?.readableBytes, size > maxMessageSize { throw Failure.messageTooLarge(maxMessageSize) }
                if frame.fin, let whole = text { return String(buffer: whole) }
            }
            return nil
        }
    }

    private enum Upgrade {
        case upgraded(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case refused
    }

    /// Opens `url`, runs `body` with the connection and closes it, on every path.
    ///
    /// - Parameters:
    ///   - headers: Extra request headers (`Origin`, …); `Host` is the URL's.
    ///   - maxMessageSize: The largest frame, and message, accepted.
    /// - Throws: ``Failure/notUpgraded(_:)`` when the server refuses the upgrade; what `body` throws.
    static func connect<Result>(
        _ url: String, headers: [(String, String)] = [], maxMessageSize: Int = 1 << 24, _ body: (inout Connection) async throws -> Result
    ) async throws -> Result {
        guard let components = URLComponents(string: url), components.scheme == "ws", let host = components.host, let port = components.port else {
            throw Failure.badURL(url)
        }
        let path = (components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath) + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        var requestHeaders = HTTPHeaders([("Host", "\(host):\(port)"), ("Content-Length", "0")])
        for (name, value) in headers { requestHeaders.add(name: name, value: value) }
        let request = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: requestHeaders)

        let upgrade: EventLoopFuture<Upgrade> = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(maxFrameSize: maxMessageSize) { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        .upgraded(try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel))
                    }
                }
                let configuration = NIOTypedHTTPClientUpgradeConfiguration(upgradeRequestHead: request, upgraders: [upgrader]) { channel in
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededFuture(.refused)
                }
                // A server may send its first frames right behind its 101 response, in the same read:
                // the HTTP decoder hands those bytes on to the WebSocket decoder instead of
                // dropping them (NIO's default), or the first message is lost.
                var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
                pipeline.leftOverBytesStrategy = .forwardBytes
                return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
            }
        }
        switch try await upgrade.get() {
        case .refused:
            throw Failure.notUpgraded(url)
        case .upgraded(let channel):
            return try await channel.executeThenClose { inbound, outbound in
                var connection = Connection(inbound: inbound.makeAsyncIterator(), outbound: outbound, maxMessageSize: maxMessageSize)
                let result = try await body(&connection)
                var goingAway = ByteBuffer()
                goingAway.write(webSocketErrorCode: .normalClosure)
                try? await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: goingAway))
                return result
            }
        }
    }
}
