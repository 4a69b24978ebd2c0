/// A folder's entry record of index version 3 (docs/FORMAT.md §15.3): the names of one hash,
/// each with its item and type, so that `lookup` reads one record and `readdir` no child's.
public struct FolderEntries: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public var name: [UInt8]
        public var itemID: UInt64
        public var type: ItemRecord.ItemType
        public init(name: [UInt8], itemID: UInt64, type: ItemRecord.ItemType) { self.name = name; self.itemID = itemID; self.type = type }
    }

    /// A 17th name of one hash in a folder is refused: with a keyed hash nobody can aim at it.
    public static let maxCount = 16

    public var entries: [Entry]

    public init(_ entries: [Entry]) { self.entries = entries }

    public func encode() -> [UInt8] {
        precondition((1...Self.maxCount).contains(entries.count), "an entry record holds 1 to 16 names")
        var writer = ByteWriter(capacity: 1 + entries.count * 40)
        writer.u8(UInt8(entries.count))
        for entry in entries { writer.lp8(entry.name); writer.u64(entry.itemID); writer.u8(entry.type.rawValue) }
        return writer.bytes
    }

    /// Decodes the record at key (F, 2^31 + `hash`); `entryHash` is H of §15.3 under the
    /// vault's entry hash key. Names MUST be valid, strictly increasing and of that hash.
    public static func decode(_ bytes: [UInt8], hash: UInt32, entryHash: ([UInt8]) throws -> UInt32) throws -> FolderEntries {
        var reader = ByteReader(bytes, context: "folder entries")
        let count = Int(try reader.u8())
        guard (1...maxCount).contains(count) else { throw FormatError.invalid("folder entries: count \(count)") }
        var entries: [Entry] = []
        for _ in 0..<count {
            let name = try reader.lp8()
            try ItemRecord.validateName(name)
            let itemID = try reader.u64(), rawType = try reader.u8()
            guard let type = ItemRecord.ItemType(rawValue: rawType) else { throw FormatError.invalid("folder entries: type \(rawType)") }
            // Item 1 has no link, and a reserved ID is no item: no entry can match either.
            guard itemID != Format.rootItemID, !IndexKeyV3.isReserved(itemID) else {
                throw FormatError.invalid("folder entries: item \(itemID) cannot have a name")
            }
            if let previous = entries.last, !previous.name.lexicographicallyPrecedes(name) {
                throw FormatError.invalid("folder entries: names out of order")
            }
            guard try entryHash(name) == hash else { throw FormatError.invalid("folder entries: a name whose hash is not \(hash)") }
            entries.append(Entry(name: name, itemID: itemID, type: type))
        }
        try reader.expectEnd()
        return FolderEntries(entries)
    }
}
