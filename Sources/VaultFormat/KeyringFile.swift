/// The keyring file (docs/FORMAT.md §8.1): tagged items of secret bytes with attributes, and a
/// SHA-256 checksum so that a damaged salt is reported instead of opening an empty vault.
/// The checksum function is passed in: this module does no cryptography.
public struct KeyringFile: Sendable {
    public struct Item: Sendable {
        public var tag: String
        public var attributes: [(name: String, value: String)]
        public var secret: [UInt8]
        public init(tag: String, attributes: [(name: String, value: String)], secret: [UInt8]) {
            self.tag = tag; self.attributes = attributes; self.secret = secret
        }
        public func attribute(_ name: String) -> String? { attributes.first { $0.name == name }?.value }
    }

    public static let magic = Array("DSKEYRNG".utf8)
    public static let checksumSize = 32
    public static let maxSecretSize = 4096

    public var items: [Item]
    public init(items: [Item]) { self.items = items }

    public func encode(checksum: ([UInt8]) -> [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: 256)
        writer.raw(Self.magic)
        writer.u8(Format.version)
        writer.u16(UInt16(items.count))
        for item in items {
            writer.lp8(Array(item.tag.utf8))
            writer.u16(UInt16(item.attributes.count))
            for attribute in item.attributes {
                writer.lp8(Array(attribute.name.utf8))
                writer.lp16(Array(attribute.value.utf8))
            }
            writer.lp16(item.secret)
        }
        var bytes = writer.bytes
        bytes.append(contentsOf: checksum(bytes))
        return bytes
    }

    public static func decode(_ bytes: [UInt8], checksum: ([UInt8]) -> [UInt8]) throws -> KeyringFile {
        guard bytes.count >= magic.count + 3 + checksumSize else { throw FormatError.truncated("keyring") }
        guard Array(bytes.prefix(magic.count)) == magic else { throw FormatError.invalid("keyring: not a DotSafe keyring") }
        let content = Array(bytes.dropLast(checksumSize))
        guard checksum(content) == Array(bytes.suffix(checksumSize)) else { throw FormatError.invalid("keyring checksum: the file is damaged") }
        var reader = ByteReader(content, context: "keyring")
        _ = try reader.raw(magic.count)
        let version = try reader.u8()
        if version > Format.version { throw FormatError.newerVersion(found: version) }
        guard version == Format.version else { throw FormatError.invalid("keyring version \(version)") }
        let count = Int(try reader.u16())
        var items: [Item] = []
        for _ in 0..<count {
            let tag = try text(reader.lp8(), "keyring tag")
            guard !tag.isEmpty, !items.contains(where: { $0.tag == tag }) else { throw FormatError.invalid("keyring tag '\(tag)'") }
            var attributes: [(name: String, value: String)] = []
            for _ in 0..<Int(try reader.u16()) {
                attributes.append((try text(reader.lp8(), "keyring attribute"), try text(reader.lp16(), "keyring attribute")))
            }
            let secret = try reader.lp16()
            guard (1...maxSecretSize).contains(secret.count) else { throw FormatError.invalid("keyring secret size") }
            items.append(Item(tag: tag, attributes: attributes, secret: secret))
        }
        try reader.expectEnd()
        return KeyringFile(items: items)
    }

    private static func text(_ bytes: [UInt8], _ what: String) throws -> String {
        guard let string = String(validating: bytes, as: UTF8.self) else { throw FormatError.invalid("\(what): not UTF-8") }
        return string
    }
}
