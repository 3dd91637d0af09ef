import Testing
import ZeroMQ

@Suite("Z85 and CURVE keys")
struct Z85Tests {
    @Test("the RFC 32 test vector encodes and decodes")
    func rfcVector() throws {
        let bytes: [UInt8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
        #expect(try Z85.encode(bytes) == "HelloWorld")
        #expect(try Z85.decode("HelloWorld") == bytes)
    }

    @Test("random data round-trips", arguments: [0, 4, 32, 400])
    func roundTrip(count: Int) throws {
        let bytes = pattern(count: count, seed: count)
        let text = try Z85.encode(bytes)
        #expect(text.count == count / 4 * 5)
        #expect(try Z85.decode(text) == bytes)
    }

    @Test("a length that is not a multiple of 4 is refused with a clear error")
    func badEncodeLength() throws {
        let error = try #require(throws: ZMQError.self) { try Z85.encode([1, 2, 3]) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("3 bytes"))
    }

    @Test("text whose length is not a multiple of 5 is refused")
    func badDecodeLength() throws {
        let error = try #require(throws: ZMQError.self) { try Z85.decode("Hello!") }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("multiple of 5"))
    }

    @Test("characters outside the alphabet are refused")
    func badCharacter() throws {
        let error = try #require(throws: ZMQError.self) { try Z85.decode("Hell\"World") }
        #expect(error.message.contains("offset 4"))
    }

    @Test("CURVE keys must be 32 bytes or 40 Z85 characters")
    func keyLengths() throws {
        #expect(throws: ZMQError.self) { try CurveKey(bytes: [UInt8](repeating: 1, count: 31)) }
        let error = try #require(throws: ZMQError.self) { try CurveKey(z85: "HelloWorld") }
        #expect(error.message.contains("40 characters; got 10"))
    }

    @Test("a generated pair is consistent, and the public key can be derived from the secret")
    func keyPair() throws {
        try #require(ZeroMQLibrary.hasCurve)
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey.bytes.count == 32)
        #expect(pair.secretKey.z85.count == 40)
        #expect(try CurveKey(z85: pair.publicKey.z85) == pair.publicKey)
        #expect(try CurveKeyPair(secretKey: pair.secretKey).publicKey == pair.publicKey)
        #expect(pair.secretKey.description == "<secret>")
        #expect(pair.publicKey.description == pair.publicKey.z85)
        #expect(try CurveKeyPair.generate() != pair)
    }
}
