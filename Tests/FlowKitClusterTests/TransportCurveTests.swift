@testable import FlowKitCluster
import Logging
import Testing
import ZeroMQ

/// CURVE is never silently lost: a socket asked for it that cannot have it is refused.
@Suite struct TransportCurveTests {
    @Test func aSocketWithoutCurveIsRefusedRatherThanLeftInPlainText() async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, name: "curve-test", logger: logger)
        // FlowKit's own engine has no CURVE: configuring one of its sockets as a CURVE server fails.
        let error = await #expect(throws: CurveSecurityError.self) {
            _ = try await loop.open(.router, engine: .native) { socket in
                _ = try TransportOptions.curveSocket(socket)
                try socket.bind("tcp://127.0.0.1:*")
            }
        }
        #expect(error?.description.contains("refusing to open it in plain text") == true)
        // A libzmq socket can have it.
        let (socket, _) = try await loop.open(.router, engine: .libzmq) { socket in
            _ = try TransportOptions.curveSocket(socket)
        }
        await socket.close(linger: .zero)
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}
