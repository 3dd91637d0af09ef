import FlowKitCore
import ZeroMQ

extension Coordinator {
    /// The three sockets, bound.
    struct Sockets: Sendable {
        var submit: AsyncSocket
        var publish: AsyncSocket
        var sync: AsyncSocket
        var endpoints: CoordinatorEndpoints
    }

    /// The submit and publish sockets on `loop`, the ordering thread; the sync socket on `syncLoop`.
    func bind(on loop: IOLoop, syncLoop: IOLoop) async throws -> Sockets {
        let transport = configuration.transport
        if let curve = transport.curve, curve.allowedNodes == nil {
            throw CurveSecurityError(
                "a coordinator with CURVE needs the node keys that may say HELLO (CurveSecurity.allowedNodes, --curve-allow-nodes): its submit socket admits no other key"
            )
        }
        let socketConfiguration = AsyncSocket.Configuration(receiveBufferCapacity: 4_096, sendQueueCapacity: 65_536)
        // With CURVE, only node keys reach the submit socket: only a node may say HELLO.
        let (submit, submitEndpoint) = try await transport.openServer(
            .router, on: loop, configuration: socketConfiguration, binding: configuration.submitEndpoint, zapDomain: CurveSecurity.nodesDomain
        )
        // XPUB, so the coordinator learns which topics are wanted: instance runs are published only
        // while someone subscribes to an address prefix.
        let (publish, publishEndpoint) = try await transport.openServer(
            .xpub, on: loop, configuration: socketConfiguration, binding: configuration.publishEndpoint
        ) { [configuration] socket in
            // A publish socket only receives subscriptions, each one topic: an address at most. A
            // longer one would cost libzmq's subscription trie ~30 bytes of memory per byte of
            // topic, kept after the subscriber leaves, so its sender is disconnected instead.
            try socket.setOption(.maxMessageSize, Self.maxSubscriptionBytes)
            if let hwm = configuration.publishHighWaterMark { try socket.setOption(.sendHighWaterMark, hwm) }
            if let bytes = configuration.publishBufferBytes { try socket.setOption(.sendBufferBytes, bytes) }
        }
        let (sync, syncEndpoint) = try await transport.openServer(
            .router, on: syncLoop, configuration: socketConfiguration, binding: configuration.syncEndpoint
        )
        return Sockets(
            submit: submit, publish: publish, sync: sync,
            endpoints: CoordinatorEndpoints(submit: submitEndpoint, publish: publishEndpoint, sync: syncEndpoint)
        )
    }
}
