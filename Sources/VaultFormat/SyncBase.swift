/// The state two sides of a sync last agreed on (docs/FORMAT.md §13.11): per item its version,
/// place (first link) and a digest of its payload, and the files of this device that the last
/// published remote root references. It holds no key (R-DEL-2). Stored as pieces of the
/// writing device, listed with their keys in the root's extension tag 1.
public struct SyncBase: Equatable, Sendable {
    public static let extensionTag: UInt16 = 1
    public static let hashSize = 16
    static let itemSize = 8 + 8 + 8 + hashSize + hashSize

    public struct Item: Equatable, Sendable {
        public var id: UInt64
        public var version: UInt64
        public var parent: UInt64
        public var nameHash: [UInt8]
        public var digest: [UInt8]
        public init(id: UInt64, version: UInt64, parent: UInt64, nameHash: [UInt8], digest: [UInt8]) {
            self.id = id; self.version = version; self.parent = parent; self.nameHash = nameHash; self.digest = digest
        }
    }

    /// Extension tag 1's value: the generations and where the pieces lie.
    public struct Header: Equatable, Sendable {
        public var localGeneration: UInt64
        public var readGeneration: UInt64
        public var publishedGeneration: UInt64
        /// Wiped by the owner once the keys are in locked memory.
        public var pieces: [(file: FileRef, key: [UInt8])]

        public init(localGeneration: UInt64, readGeneration: UInt64, publishedGeneration: UInt64, pieces: [(file: FileRef, key: [UInt8])]) {
            self.localGeneration = localGeneration; self.readGeneration = readGeneration
            self.publishedGeneration = publishedGeneration; self.pieces = pieces
        }

        public static func == (a: Header, b: Header) -> Bool {
            a.localGeneration == b.localGeneration && a.readGeneration == b.readGeneration
                && a.publishedGeneration == b.publishedGeneration
                && a.pieces.map(\.file) == b.pieces.map(\.file) && a.pieces.map(\.key) == b.pieces.map(\.key)
        }

        public func encode() -> [UInt8] {
            var writer = ByteWriter(capacity: 28 + pieces.count * 40)
            writer.u64(localGeneration)
            writer.u64(readGeneration)
            writer.u64(publishedGeneration)
            writer.u32(UInt32(pieces.count))
            for piece in pieces { writer.u64(piece.file.raw); writer.raw(piece.key) }
            return writer.bytes
        }

        public static func decode(_ value: [UInt8]) throws -> Header {
            var reader = ByteReader(value[...], context: "sync base")
            let local = try reader.u64(), read = try reader.u64(), published = try reader.u64()
            let count = Int(try reader.u32())
            guard count <= reader.remaining / (8 + Format.keySize) else { throw FormatError.truncated("sync base pieces") }
            var pieces: [(file: FileRef, key: [UInt8])] = []
            for _ in 0..<count { pieces.append((FileRef(raw: try reader.u64()), try reader.raw(Format.keySize))) }
            try reader.expectEnd()
            return Header(localGeneration: local, readGeneration: read, publishedGeneration: published, pieces: pieces)
        }
    }

    /// By item ID, strictly increasing.
    public var items: [Item]
    /// Files of the writing device (raw FileRefs), strictly increasing.
    public var pinned: [UInt64]

    public init(items: [Item], pinned: [UInt64]) {
        self.items = items
        self.pinned = pinned
    }

    /// The stream the pieces' bodies make together.
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 8 + items.count * Self.itemSize + pinned.count * 8)
        writer.u32(UInt32(items.count))
        for item in items {
            writer.u64(item.id)
            writer.u64(item.version)
            writer.u64(item.parent)
            writer.raw(item.nameHash)
            writer.raw(item.digest)
        }
        writer.u32(UInt32(pinned.count))
        for file in pinned { writer.u64(file) }
        return writer.bytes
    }

    public static func decode(_ stream: [UInt8]) throws -> SyncBase {
        var reader = ByteReader(stream[...], context: "sync base")
        let count = Int(try reader.u32())
        guard count <= reader.remaining / itemSize else { throw FormatError.truncated("sync base items") }
        var items: [Item] = []
        items.reserveCapacity(count)
        for _ in 0..<count {
            let item = Item(id: try reader.u64(), version: try reader.u64(), parent: try reader.u64(),
                            nameHash: try reader.raw(hashSize), digest: try reader.raw(hashSize))
            if let last = items.last, last.id >= item.id { throw FormatError.invalid("sync base: items out of order") }
            items.append(item)
        }
        let pinnedCount = Int(try reader.u32())
        guard pinnedCount <= reader.remaining / 8 else { throw FormatError.truncated("sync base pinned files") }
        var pinned: [UInt64] = []
        for _ in 0..<pinnedCount {
            let file = try reader.u64()
            if let last = pinned.last, last >= file { throw FormatError.invalid("sync base: pinned files out of order") }
            pinned.append(file)
        }
        try reader.expectEnd()
        return SyncBase(items: items, pinned: pinned)
    }

    /// The stream cut into piece bodies of at most one payload each.
    public static func pieces(of stream: [UInt8]) -> [ArraySlice<UInt8>] {
        stride(from: 0, to: max(stream.count, 1), by: Format.payloadSize).map { stream[$0..<min($0 + Format.payloadSize, stream.count)] }
    }
}
