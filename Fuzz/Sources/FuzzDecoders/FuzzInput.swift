/// How a fuzz input becomes a decoder choice and message frames.
///
/// Byte 0 picks the decoder (modulo their number); byte 1 is the frame count (1 to 4); then each
/// frame but the last is a big-endian `u16` length and its bytes; the last frame is the rest. A
/// length past the end takes what is left, so every input decodes to something.
struct FuzzInput {
    var decoder: Int
    var frames: [[UInt8]]

    init(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 2 else {
            decoder = Int(bytes.first ?? 0)
            frames = [[]]
            return
        }
        decoder = Int(bytes[0])
        let count = Int(bytes[1] % 4) + 1
        var frames: [[UInt8]] = []
        var offset = 2
        for _ in 1..<count {
            guard offset + 2 <= bytes.count else { break }
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            offset += 2
            let end = min(offset + length, bytes.count)
            frames.append(Array(bytes[offset..<end]))
            offset = end
        }
        frames.append(Array(bytes[min(offset, bytes.count)...]))
        self.frames = frames
    }

    /// The input that decodes to `frames` for decoder `decoder`: how seeds are written.
    static func encode(decoder: Int, frames: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(decoder), UInt8(frames.count - 1)]
        for frame in frames.dropLast() {
            bytes += [UInt8(frame.count >> 8 & 0xFF), UInt8(frame.count & 0xFF)] + frame
        }
        return bytes + (frames.last ?? [])
    }
}
