import Testing
import ZeroMQ

@Suite("Message values")
struct MessageTests {
    @Test("messages are ordered frames with byte and pointer access")
    func frames() {
        var message: Message = ["topic", [0, 1, 2]]
        message.append(.empty)
        #expect(message.count == 3)
        #expect(message[0].string == "topic")
        #expect(message[1].bytes == [0, 1, 2])
        #expect(message[2].isEmpty)
        #expect(message.byteCount == 8)
        let sum = message[1].withUnsafeBytes { $0.reduce(0) { $0 + Int($1) } }
        #expect(sum == 3)
        #expect(Message(strings: ["a", "b"]) == ["a", "b"])
        #expect(Message(parts: [[1], [2]]).frames == [Frame([1]), Frame([2])])
        #expect(Message("one").count == 1)
        #expect(Message(frames: []).isEmpty)
    }

    @Test("descriptions show text frames as text and binary as hex")
    func description() {
        let message: Message = ["hello", [0xFF, 0x00]]
        #expect(message.description == "Message[\"hello\", <2 bytes: ff00>]")
    }
}
