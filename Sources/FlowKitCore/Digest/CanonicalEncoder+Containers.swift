extension CanonicalEncoding {
    /// The `Swift.Encoder` that fills one ``Slot``.
    struct Encoder: Swift.Encoder {
        let slot: Slot
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(KeyedContainer<Key>(storage: slot.keyed(), codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            UnkeyedContainer(storage: slot.unkeyed(), codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            SingleValueContainer(slot: slot, codingPath: codingPath)
        }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let storage: Slot.Keyed
        let codingPath: [any CodingKey]

        private func slot(for key: Key) -> Slot {
            let slot = Slot()
            storage.entries[key.stringValue] = slot
            return slot
        }

        mutating func encodeNil(forKey key: Key) throws { slot(for: key).value = .primitive([Tag.null]) }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try CanonicalEncoding.encode(value, into: slot(for: key), codingPath: codingPath + [key])
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type,
            forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(
                KeyedContainer<NestedKey>(storage: slot(for: key).keyed(), codingPath: codingPath + [key])
            )
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            UnkeyedContainer(storage: slot(for: key).unkeyed(), codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Swift.Encoder {
            Encoder(slot: slot(for: Key(stringValue: "super")!), codingPath: codingPath)
        }

        mutating func superEncoder(forKey key: Key) -> any Swift.Encoder {
            Encoder(slot: slot(for: key), codingPath: codingPath + [key])
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let storage: Slot.Unkeyed
        let codingPath: [any CodingKey]
        var count: Int { storage.elements.count }

        private func nextSlot() -> Slot {
            let slot = Slot()
            storage.elements.append(slot)
            return slot
        }

        mutating func encodeNil() throws { nextSlot().value = .primitive([Tag.null]) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            try CanonicalEncoding.encode(value, into: nextSlot(), codingPath: codingPath)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type
        ) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(KeyedContainer<NestedKey>(storage: nextSlot().keyed(), codingPath: codingPath))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            UnkeyedContainer(storage: nextSlot().unkeyed(), codingPath: codingPath)
        }

        mutating func superEncoder() -> any Swift.Encoder {
            Encoder(slot: nextSlot(), codingPath: codingPath)
        }
    }

    struct SingleValueContainer: SingleValueEncodingContainer {
        let slot: Slot
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { slot.value = .primitive([Tag.null]) }
        mutating func encode(_ value: Bool) throws { slot.value = .primitive(primitive(value)) }
        mutating func encode(_ value: String) throws { slot.value = .primitive(primitive(value)) }
        mutating func encode(_ value: Double) throws { slot.value = .primitive(primitive(value)) }
        mutating func encode(_ value: Float) throws { slot.value = .primitive(primitive(Double(value))) }
        mutating func encode(_ value: Int) throws { slot.value = .primitive(primitive(signed: Int64(value))) }
        mutating func encode(_ value: Int8) throws { slot.value = .primitive(primitive(signed: Int64(value))) }
        mutating func encode(_ value: Int16) throws { slot.value = .primitive(primitive(signed: Int64(value))) }
        mutating func encode(_ value: Int32) throws { slot.value = .primitive(primitive(signed: Int64(value))) }
        mutating func encode(_ value: Int64) throws { slot.value = .primitive(primitive(signed: value)) }
        mutating func encode(_ value: UInt) throws { slot.value = .primitive(primitive(unsigned: UInt64(value))) }
        mutating func encode(_ value: UInt8) throws { slot.value = .primitive(primitive(unsigned: UInt64(value))) }
        mutating func encode(_ value: UInt16) throws { slot.value = .primitive(primitive(unsigned: UInt64(value))) }
        mutating func encode(_ value: UInt32) throws { slot.value = .primitive(primitive(unsigned: UInt64(value))) }
        mutating func encode(_ value: UInt64) throws { slot.value = .primitive(primitive(unsigned: value)) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            try CanonicalEncoding.encode(value, into: slot, codingPath: codingPath)
        }
    }
}
