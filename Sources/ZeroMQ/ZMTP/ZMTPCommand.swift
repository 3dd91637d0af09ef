/// A command frame of ZMTP 3.1: a short name and its data.
///
/// The engine sends READY, SUBSCRIBE, CANCEL, PING and PONG, and reads those and ERROR.
/// Commands it does not know are ignored, as RFC 37 asks, so a newer peer can still talk.
enum ZMTPCommand: Hashable, Sendable {
    /// Ends the NULL handshake, carrying the sender's metadata (`Socket-Type`, `Identity`).
    case ready(ZMTPMetadata)
    /// The peer gives up on the connection, with a reason.
    case error(reason: String)
    /// A subscriber asks for messages starting with the prefix.
    case subscribe(prefix: [UInt8])
    /// A subscriber withdraws a prefix.
    case cancel(prefix: [UInt8])
    /// A heartbeat: answer with PONG and `context`; the sender drops the connection after
    /// `ttl` tenths of a second without traffic.
    case ping(ttl: UInt16, context: [UInt8])
    case pong(context: [UInt8])
    /// A command this engine does not know (ignored).
    case unknown(name: String)

    /// Reads a command frame's body (name size, name, data).
    init(parsing body: ArraySlice<UInt8>) throws(ZMTPError) {
        guard let nameSize = body.first, body.count >= 1 + Int(nameSize), nameSize > 0 else {
            throw ZMTPError(.malformed, "a command frame with a missing or truncated name")
        }
        let nameEnd = body.startIndex + 1 + Int(nameSize)
        let name = String(decoding: body[(body.startIndex + 1)..<nameEnd], as: UTF8.self)
        let data = body[nameEnd...]
        switch name {
        case "READY":
            self = .ready(try ZMTPMetadata(parsing: data))
        case "ERROR":
            guard let size = data.first, data.count >= 1 + Int(size) else {
                throw ZMTPError(.malformed, "an ERROR command with a truncated reason")
            }
            self = .error(reason: String(decoding: data.dropFirst().prefix(Int(size)), as: UTF8.self))
        case "SUBSCRIBE":
            self = .subscribe(prefix: Array(data))
        case "CANCEL":
            self = .cancel(prefix: Array(data))
        case "PING":
            guard data.count >= 2, data.count <= 2 + 16 else {
                throw ZMTPError(.malformed, "a PING command of \(data.count) bytes (2 to 18 expected)")
            }
            let ttl = UInt16(data[data.startIndex]) << 8 | UInt16(data[data.startIndex + 1])
            self = .ping(ttl: ttl, context: Array(data.dropFirst(2)))
        case "PONG":
            self = .pong(context: Array(data.prefix(16)))
        default:
            self = .unknown(name: name)
        }
    }

    var name: String {
        switch self {
        case .ready: "READY"
        case .error: "ERROR"
        case .subscribe: "SUBSCRIBE"
        case .cancel: "CANCEL"
        case .ping: "PING"
        case .pong: "PONG"
        case .unknown(let name): name
        }
    }

    /// The frame body: name size, name, data.
    var body: [UInt8] {
        var bytes: [UInt8] = []
        let name = Array(self.name.utf8.prefix(255))
        bytes.append(UInt8(name.count))
        bytes += name
        switch self {
        case .ready(let metadata): metadata.encode(into: &bytes)
        case .error(let reason):
            let text = Array(reason.utf8.prefix(255))
            bytes.append(UInt8(text.count))
            bytes += text
        case .subscribe(let prefix), .cancel(let prefix): bytes += prefix
        case .ping(let ttl, let context):
            bytes += [UInt8(ttl >> 8), UInt8(ttl & 0xFF)]
            bytes += context.prefix(16)
        case .pong(let context): bytes += context.prefix(16)
        case .unknown: break
        }
        return bytes
    }
}

/// The properties of a READY command: names compared without case, values any bytes.
struct ZMTPMetadata: Hashable, Sendable {
    struct Property: Hashable, Sendable {
        var name: String
        var value: [UInt8]
    }

    var properties: [Property] = []

    init(_ properties: [(String, [UInt8])] = []) {
        self.properties = properties.map { Property(name: $0.0, value: $0.1) }
    }

    init(parsing data: ArraySlice<UInt8>) throws(ZMTPError) {
        var index = data.startIndex
        while index < data.endIndex {
            let nameSize = Int(data[index])
            let valueSizeStart = index + 1 + nameSize
            guard nameSize > 0, valueSizeStart + 4 <= data.endIndex else {
                throw ZMTPError(.malformed, "a READY property with a truncated name")
            }
            let name = String(decoding: data[(index + 1)..<valueSizeStart], as: UTF8.self)
            let valueSize = data[valueSizeStart..<(valueSizeStart + 4)].reduce(0) { $0 << 8 | Int($1) }
            let valueStart = valueSizeStart + 4
            guard valueSize <= data.endIndex - valueStart else {
                throw ZMTPError(.malformed, "the READY property \(name) claims \(valueSize) bytes past the command's end")
            }
            properties.append(Property(name: name, value: Array(data[valueStart..<(valueStart + valueSize)])))
            index = valueStart + valueSize
        }
    }

    /// The value of the first property named `name` (any case).
    subscript(name: String) -> [UInt8]? {
        let wanted = name.lowercased()
        return properties.first { $0.name.lowercased() == wanted }?.value
    }

    func encode(into bytes: inout [UInt8]) {
        for property in properties {
            let name = Array(property.name.utf8.prefix(255))
            bytes.append(UInt8(name.count))
            bytes += name
            let size = UInt32(property.value.count)
            bytes += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            bytes += property.value
        }
    }
}
