import FlowKitCluster
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
            ]
            for (json, address, code) in refusedByLibrary {
                let error = await #expect(throws: ProtocolError.self, "\(json) to \(address)") {
                    try await client.emit(json: json, to: address)
                }
                #expect(error?.code == code, "\(json) to \(address): \(String(describing: error))")
            }

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
                ("protocol version 2", [Wire.header(type: 0x30, version: 2) + Wire.u64(43)], .unsupportedVersion, 0),
                ("an unknown message type", [Wire.header(type: 0x6E) + Wire.u64(44)], .unknownType, 44),
                ("a reply type sent as a request", [Wire.header(type: 0x31) + Wire.u64(45)], .unknownType, 45),
                (
                    "EMIT with an unknown codec",
                    [Wire.emitHeader(request: 46, address: "counter/a", codec: 9), Array(increment.utf8)],
                    .unsupportedCodec, 46
                ),
                ("EMIT with a truncated address", [Array(Wire.emitHeader(request: 47, address: "counter/a").dropLast(3)), Array(increment.utf8)], .truncated, 47),
                ("8 MiB of garbage", [[UInt8](repeating: 0xA5, count: 8 << 20)], .badMagic, 0),
            ]
            for (name, frames, code, request) in rawCases {
                let reply = try await raw.expectError(for: frames)
                #expect(reply.error.code == code, "\(name): \(reply.error)")
                #expect(!reply.error.message.isEmpty)
                if code == .badMagic || code == .unsupportedVersion {
                    // PROTOCOL.md 5.5: "request is the refused request's id, or 0 when it could not
                    // be read". A frame that is not FlowKit (or not this version) has no request id.
                    withKnownIssue("the node echoes bytes 4..<12 of any frame as its request id, even when the header is not FlowKit's") {
                        #expect(reply.request == request, "\(name): the ERROR names request \(reply.request)")
                    } when: {
                        reply.request != request
                    }
                } else {
                    #expect(reply.request == request, "\(name): the ERROR names request \(reply.request)")
                }
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
                "unknown_flow": 1, "undecodable_event": 3, "malformed": 1, "wrong_frame_count": 3, "bad_magic": 2,
                "truncated": 2, "unsupported_version": 1, "unknown_message_type": 2, "unsupported_codec": 1,
            ]
            for (label, count) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(after.rejected[label] == count, "rejected[\(label)] in \(after.rejected)")
            }
            withKnownIssue("an oversize message is dropped by libzmq and never counted: STATUS has no rejected[\"oversize\"]") {
                #expect(after.rejected["oversize"] == 1, "rejected in \(after.rejected)")
            }

            // And the node still takes a valid emit, next in the order.
            let next = try await client.emit(json: increment, to: "counter/a", wait: .applied)
            #expect(next.seq == first.seq + 1)
            let state = try await cluster.client(2).query("counter/a", minApplied: next.seq)
            #expect(try state.decode(CounterFlow.State.self).count == 2)
        }
    }
}
