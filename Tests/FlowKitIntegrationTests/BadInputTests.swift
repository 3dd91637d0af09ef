@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import Foundation
import Testing

extension ClusterProcessTests {
    /// Everything a broken or hostile client can send to a node's client socket is refused with an
    /// ERROR naming the reason (where a reply is possible), counted, and never ordered; the node
    /// keeps serving.
    @Test func badInputIsRefusedNeverOrderedAndTheNodeKeepsServing() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let client = cluster.client(1)
            let increment = #"{"increment":{}}"#
            let first = try await client.emit(json: increment, to: "counter/a", wait: .applied)
            try await cluster.waitUntilApplied(first.seq)
            let before = try await client.status()
            try #require(before.rejected.isEmpty)

            // Through the client library: refused before the order.
            let refusedByLibrary: [(json: String, address: String, code: ProtocolError.Code)] = [
                (increment, "nosuchflow/a", .unknownFlow),
                (#"{"explode":{}}"#, "counter/a", .undecodableEvent),
                (#"{"add":{"_0":"five"}}"#, "counter/a", .undecodableEvent),
                ("this is not JSON", "counter/a", .undecodableEvent),
                (increment, "counter", .malformed),
                (increment, "counter/" + String(repeating: "k", count: 201), .malformed),
            ]
            for (json, address, code) in refusedByLibrary {
                let error = await #expect(throws: ProtocolError.self, "\(json) to \(address)") {
                    try await client.emit(json: json, to: address)
                }
                #expect(error?.code == code, "\(json) to \(address): \(String(describing: error))")
            }

            let cancelError = await #expect(throws: ProtocolError.self) {
                try await client.cancel(at: "nosuchflow/a", id: "timer")
            }
            #expect(cancelError?.code == .unknownFlow)
            let queryError = await #expect(throws: ProtocolError.self) {
                try await client.query("counter/never-written")
            }
            #expect(queryError?.code == .notFound)

            // Raw frames on a DEALER socket.
            let endpoint = try #require(cluster.node(1)?.clientEndpoint)
            let raw = try await RawDealer(endpoint: endpoint, logger: cluster.logger)
            let rawCases: [(name: String, frames: [[UInt8]], code: ProtocolError.Code, request: UInt64)] = [
                ("EMIT without its payload frame", [Wire.emitHeader(request: 41, address: "counter/a")], .wrongFrameCount, 41),
                (
                    "EMIT with an extra frame",
                    [Wire.emitHeader(request: 42, address: "counter/a"), Array(increment.utf8), [1, 2, 3]],
                    .wrongFrameCount, 42
                ),
                ("a garbage frame", [Array("GET / HTTP/1.1\r\n\r\n".utf8)], .badMagic, 0),
                ("a truncated header", [[0x46, 0x4B]], .truncated, 0),
                ("protocol version 1", [Wire.header(type: 0x30, version: 1) + Wire.u64(43)], .unsupportedVersion, 0),
                ("an unknown message type", [Wire.header(type: 0x6E) + Wire.u64(44)], .unknownType, 44),
                ("a reply type sent as a request", [Wire.header(type: 0x31) + Wire.u64(45)], .unknownType, 45),
                (
                    "EMIT with an unknown codec",
                    [Wire.emitHeader(request: 46, address: "counter/a", codec: 9), Array(increment.utf8)],
                    .unsupportedCodec, 46
                ),
                ("EMIT with a truncated address", [Array(Wire.emitHeader(request: 47, address: "counter/a").dropLast(3)), Array(increment.utf8)], .truncated, 47),
                (
                    "CANCEL with neither an id nor all",
                    [Wire.header(type: 0x34) + Wire.u64(50) + [0, 0] + Wire.shortString("timer/t") + Wire.shortString("")],
                    .malformed, 50
                ),
                ("8 MiB of garbage", [[UInt8](repeating: 0xA5, count: 8 << 20)], .badMagic, 0),
            ]
            for (name, frames, code, request) in rawCases {
                let reply = try await raw.expectError(for: frames)
                #expect(reply.error.code == code, "\(name): \(reply.error)")
                #expect(!reply.error.message.isEmpty)
                // PROTOCOL.md 5.5: "request is the refused request's id, or 0 when it could not be
                // read"; a frame that is not FlowKit's (or not this version) has no request id.
                #expect(reply.request == request, "\(name): the ERROR names request \(reply.request)")
            }

            // Larger than the node's ZMQ_MAXMSGSIZE (64 MiB): libzmq drops the connection, so no
            // reply is possible; the node must still count it and keep serving.
            let oversize = TransportOptions().maxMessageBytes + 1
            try await raw.send([Wire.emitHeader(request: 48, address: "kv/big"), [UInt8](repeating: 0x20, count: Int(oversize))])
            let answer = try await raw.receive(timeout: .seconds(2))
            #expect(answer == nil, "a message over the limit is dropped before it is read")
            // The DEALER reconnects by itself and the node answers it again.
            let again = try await raw.expectError(for: [Wire.emitHeader(request: 49, address: "counter/a")], timeout: .seconds(10))
            #expect(again.error.code == .wrongFrameCount)
            await raw.close()

            // Nothing was ordered, on either node, and every reason was counted.
            let after = try await client.status()
            #expect(after.applied == before.applied)
            #expect(after.knownHead == before.knownHead)
            #expect(try await cluster.client(2).status().applied == before.applied)
            let expected: [String: Int] = [
                "unknown_flow": 2, "undecodable_event": 3, "malformed": 3, "wrong_frame_count": 3, "bad_magic": 2,
                "truncated": 2, "unsupported_version": 1, "unknown_message_type": 2, "unsupported_codec": 1,
            ]
            for (label, count) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(after.rejected[label] == count, "rejected[\(label)] in \(after.rejected)")
            }
            // A message over the transport's limit never reaches the node: libzmq drops the connection
            // (docs/PROTOCOL.md, "Sockets"), so there is no reply to send and nothing to count here.
            // Events over the node's own limit, below it, are refused and counted as "oversize".
            #expect(after.rejected["oversize"] == nil, "rejected in \(after.rejected)")

            // And the node still takes a valid emit, next in the order.
            let next = try await client.emit(json: increment, to: "counter/a", wait: .applied)
            #expect(next.seq == first.seq + 1)
            let state = try await cluster.client(2).query("counter/a", minApplied: next.seq)
            #expect(try state.decode(CounterFlow.State.self).count == 2)
        }
    }
}

extension ClusterProcessTests {
    /// A node takes events up to `AdmissionLimits.maxEventBytes` and refuses larger ones as oversize at once:
    /// an event that fit the transport's 64 MiB limit but not, wrapped in a SUBMIT, the
    /// coordinator's, used to be queued and resent forever.
    @Test func eventsOverTheNodesLimitAreRefusedAsOversize() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let client = cluster.client(1)
            let limit = AdmissionLimits.defaultMaxEventBytes
            func event(bytes: Int) -> String {
                let prefix = #"{"set":{"key":"k","value":""#
                let suffix = #""}}"#
                return prefix + String(repeating: "x", count: bytes - prefix.utf8.count - suffix.utf8.count) + suffix
            }

            let atLimit = try await client.emit(json: event(bytes: limit), to: "kv/big", wait: .applied)
            let other = try await cluster.client(2).query("kv/big", minApplied: atLimit.seq)
            #expect(try other.decode(KeyValueFlow.State.self).entries["k"]?.utf8.count == limit - 30)

            for size in [limit + 1, Int(TransportOptions().maxMessageBytes) - 8] {
                let json = event(bytes: size)
                let started = ContinuousClock.now
                let error = await #expect(throws: ProtocolError.self, "an event of \(size) bytes") {
                    try await client.emit(json: json, to: "kv/big")
                }
                #expect(error?.code == .oversize, "\(String(describing: error))")
                #expect(ContinuousClock.now - started < .seconds(5), "refused at once")
            }
            let status = try await client.status()
            #expect(status.rejected["oversize"] == 2)
            #expect(status.pendingSubmissions == 0, "the node holds \(status.pendingSubmissions) submission(s) to resend")
            #expect(status.applied == atLimit.seq, "nothing was ordered after the event at the limit")
            let small = try await client.emit(json: #"{"increment":{}}"#, to: "counter/after", wait: .applied)
            #expect(small.seq == atLimit.seq + 1)
        }
    }
}
