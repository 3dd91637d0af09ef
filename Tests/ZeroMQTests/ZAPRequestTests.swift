import Testing
@testable import ZeroMQ

@Suite("ZAP requests and replies")
struct ZAPRequestTests {
    static func request(mechanism: String, credentials: [[UInt8]], version: String = "1.0") -> Message {
        Message(frames: [Frame(version), Frame("id-7"), Frame("flowkit"), Frame("127.0.0.1"), .empty, Frame(mechanism)] + credentials.map(Frame.init))
    }

    @Test("requests parse per RFC 27 and replies echo the request id")
    func parse() throws {
        let key = try CurveKeyPair.generate().publicKey
        let request = try #require(ZAPRequest(Self.request(mechanism: "CURVE", credentials: [key.bytes])))
        #expect(request.version == "1.0")
        #expect(request.domain == "flowkit")
        #expect(request.address == "127.0.0.1")
        #expect(request.curveClientKey == key)
        let reply = ZAPReply(statusCode: "400", statusText: "no").message(requestID: request.requestID)
        #expect(reply.count == 6)
        #expect(reply[1].string == "id-7")
        #expect(reply[2].string == "400")
        #expect(ZAPRequest(["1.0", "too", "short"]) == nil)
    }

    @Test("the handler admits only listed CURVE keys and counts its answers")
    func decisions() async throws {
        try await withLoop { _, loop in
            let friend = try CurveKeyPair.generate().publicKey
            let stranger = try CurveKeyPair.generate().publicKey
            let zap = try await ZAPHandler.start(on: loop, allowing: [friend], logger: testLogger)
            #expect(zap.answer(Self.request(mechanism: "CURVE", credentials: [friend.bytes]))[2].string == "200")
            #expect(zap.answer(Self.request(mechanism: "CURVE", credentials: [stranger.bytes]))[2].string == "400")
            #expect(zap.answer(Self.request(mechanism: "PLAIN", credentials: [[1], [2]]))[2].string == "400")
            #expect(zap.answer(Self.request(mechanism: "NULL", credentials: []))[2].string == "400")
            #expect(zap.answer(Self.request(mechanism: "CURVE", credentials: [friend.bytes], version: "2.0"))[2].string == "500")
            #expect(zap.answer(["1.0", "id"])[2].string == "500")
            zap.allow(stranger)
            #expect(zap.answer(Self.request(mechanism: "CURVE", credentials: [stranger.bytes]))[4].string == stranger.z85)
            #expect(zap.statistics == ZAPHandler.Statistics(accepted: 2, refused: 5))
            // A second handler in the same context cannot bind.
            let error = await #expect(throws: ZMQError.self) { try await ZAPHandler.start(on: loop, allowing: [], logger: testLogger) }
            #expect(error?.code == .addressInUse)
        }
    }
}
