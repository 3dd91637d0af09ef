import Foundation

/// One key of etcd, as a range or a watch reports it.
package struct EtcdKeyValue: Sendable, Equatable {
    package var key: String
    package var value: [UInt8]
    /// The revision that created the key (0: the key does not exist).
    package var createRevision: Int64
    /// The revision of its last change.
    package var modRevision: Int64
    /// The lease it is attached to (0: none).
    package var lease: Int64

    package init(key: String, value: [UInt8], createRevision: Int64, modRevision: Int64, lease: Int64 = 0) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.lease = lease
    }
}

/// A granted lease: keys attached to it are deleted when it expires.
package struct EtcdLease: Sendable, Equatable {
    package var id: Int64
    /// Seconds it lives without a keep-alive.
    package var ttl: Int64
}

/// A condition of a transaction on one key.
package struct EtcdCompare: Sendable {
    package enum Target: Sendable {
        /// The revision that created the key; 0 means "the key does not exist".
        case createRevision(Int64)
        /// The revision of the key's last change.
        case modRevision(Int64)
        case value([UInt8])
    }

    package var key: String
    package var target: Target

    /// `key`'s target equals the given one.
    package static func equal(_ key: String, _ target: Target) -> EtcdCompare {
        EtcdCompare(key: key, target: target)
    }

    /// `key` does not exist.
    package static func absent(_ key: String) -> EtcdCompare {
        EtcdCompare(key: key, target: .createRevision(0))
    }
}

/// One operation of a transaction.
package enum EtcdOperation: Sendable {
    case put(String, [UInt8], lease: Int64 = 0)
    case delete(String)
    case get(String)
}

/// What a transaction did: which branch ran, at what revision, and what its gets read.
package struct EtcdTransactionResult: Sendable {
    /// Whether every compare held (the success branch ran).
    package var succeeded: Bool
    /// The store's revision after the transaction.
    package var revision: Int64
    /// For each get of the branch that ran, in order: the key, if it exists.
    package var reads: [EtcdKeyValue?]
}

/// A change to a watched key.
package struct EtcdWatchEvent: Sendable, Equatable {
    package enum Kind: Sendable { case put, delete }
    package var kind: Kind
    package var keyValue: EtcdKeyValue
}

// MARK: The JSON gateway's shapes

/// The v3 gateway's JSON: protobuf's JSON mapping, so 64-bit integers travel as strings, bytes as
/// base64, and fields equal to their default (0, false, empty) are left out.
enum EtcdJSON {
    struct Header: Decodable {
        var revision: String?
    }

    struct KeyValue: Decodable {
        var key: String?
        var value: String?
        var create_revision: String?
        var mod_revision: String?
        var lease: String?

        var keyValue: EtcdKeyValue {
            EtcdKeyValue(
                key: key.flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self) } ?? "",
                value: value.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } ?? [],
                createRevision: Int64(create_revision ?? "0") ?? 0,
                modRevision: Int64(mod_revision ?? "0") ?? 0,
                lease: Int64(lease ?? "0") ?? 0
            )
        }
    }

    struct RangeResponse: Decodable {
        var header: Header?
        var kvs: [KeyValue]?
    }

    struct LeaseGrantResponse: Decodable {
        var ID: String?
        var TTL: String?
        var error: String?
    }

    struct LeaseKeepAliveResponse: Decodable {
        struct Result: Decodable {
            var ID: String?
            var TTL: String?
        }
        var result: Result?
    }

    struct TxnResponse: Decodable {
        struct Response: Decodable {
            var response_range: RangeResponse?
        }
        var header: Header?
        var succeeded: Bool?
        var responses: [Response]?
    }

    struct WatchResponse: Decodable {
        struct Result: Decodable {
            struct Event: Decodable {
                var type: String?
                var kv: KeyValue?
            }
            var header: Header?
            var created: Bool?
            var canceled: Bool?
            var compact_revision: String?
            var cancel_reason: String?
            var events: [Event]?
        }
        var result: Result?
        var error: ErrorBody?
    }

    struct ErrorBody: Decodable {
        var error: String?
        var message: String?
        var code: Int?
    }

    static func base64(_ string: String) -> String { Data(string.utf8).base64EncodedString() }
    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// The end of the range of every key starting with `prefix`: the prefix with its last byte
    /// incremented (etcd's own rule).
    static func prefixEnd(_ prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return Data(bytes).base64EncodedString()
            }
            bytes.removeLast()
        }
        return Data([0]).base64EncodedString()
    }

    static func compare(_ compare: EtcdCompare) -> JSONValue {
        var json: [String: JSONValue] = ["key": .string(base64(compare.key)), "result": "EQUAL"]
        switch compare.target {
        case .createRevision(let revision):
            json["target"] = "CREATE"
            json["create_revision"] = .string(String(revision))
        case .modRevision(let revision):
            json["target"] = "MOD"
            json["mod_revision"] = .string(String(revision))
        case .value(let value):
            json["target"] = "VALUE"
            json["value"] = .string(base64(value))
        }
        return .object(json)
    }

    static func operation(_ operation: EtcdOperation) -> JSONValue {
        switch operation {
        case .put(let key, let value, let lease):
            var put: [String: JSONValue] = ["key": .string(base64(key)), "value": .string(base64(value))]
            if lease != 0 { put["lease"] = .string(String(lease)) }
            return ["request_put": .object(put)]
        case .delete(let key):
            return ["request_delete_range": ["key": .string(base64(key))]]
        case .get(let key):
            return ["request_range": ["key": .string(base64(key))]]
        }
    }
}
