import ZeroMQ

// What arrives on a follower's two sockets, fed to a LogFollower; and the sockets themselves.

extension LogFollower {
    /// A reply from the sync socket: a range, a snapshot chunk or an error; nothing for a message
    /// that did not decode.
    mutating func receive(_ reply: SyncReply, now: UInt64) -> [Action] {
        switch reply {
        case .range(let range): receive(range, now: now)
        case .snapshotChunk(let chunk): receive(chunk, now: now)
        case .error(let error): receive(error, now: now)
        case .invalid: []
        }
    }

    /// A message from the publish socket: entries under `#`, or a heartbeat. Others (status,
    /// alarms, messages that do not decode) change nothing.
    mutating func receive(published message: Message, now: UInt64) -> [Action] {
        if let entries = try? EntriesMessage(frames: message.parts) {
            return receive(entries.entries, now: now)
        }
        if let heartbeat = try? HeartbeatMessage(frames: message.parts) {
            return noteHead(heartbeat.head, now: now)
        }
        return []
    }
}

extension IOLoop {
    /// The two sockets a log follower reads, connected: a SUB on the coordinator's publish socket
    /// (batches `#` and heartbeats) and a DEALER on its sync socket (ranges and snapshots).
    func openFollowerSockets(
        to endpoints: CoordinatorEndpoints,
        transport: TransportOptions,
        serverKey: CurveKey?
    ) async throws -> (subscriber: AsyncSocket, sync: AsyncSocket) {
        let subscriber = try await transport.openClient(.sub, on: self, connecting: [endpoints.publish], serverKey: serverKey) { socket in
            try socket.subscribe(EntriesMessage.batchTopic)
            try socket.subscribe(ControlTopic.heartbeat)
        }
        do {
            let sync = try await transport.openClient(.dealer, on: self, connecting: [endpoints.sync], serverKey: serverKey)
            return (subscriber, sync)
        } catch {
            await subscriber.close(linger: .zero)
            throw error
        }
    }
}
