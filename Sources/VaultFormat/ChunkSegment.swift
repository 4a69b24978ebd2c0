/// A chunk-map segment record (docs/FORMAT.md §6.2): the stored chunks among 1024 consecutive
/// ones. Chunks without an entry are holes.
public enum ChunkSegment {
    public struct Entry: Equatable, Sendable {
        public var indexInSegment: Int
        public var ref: SealedRef
        public init(indexInSegment: Int, ref: SealedRef) { self.indexInSegment = indexInSegment; self.ref = ref }
    }

    public static let entrySize = 2 + 8 + Format.sealNonceSize

    public static func encode(_ entries: [Entry]) -> [UInt8] {
        precondition(!entries.isEmpty && entries.count <= Format.chunksPerSegment, "segment entry count")
        var writer = ByteWriter(capacity: 2 + entries.count * entrySize)
        writer.u16(UInt16(entries.count))
        for entry in entries {
            writer.u16(UInt16(entry.indexInSegment))
            writer.u64(entry.ref.fileNumber)
            writer.raw(entry.ref.nonce)
        }
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> [Entry] {
        try decodeEntries(bytes) { reader, index in
            Entry(indexInSegment: index, ref: SealedRef(fileNumber: try reader.u64(), nonce: try reader.raw(Format.sealNonceSize)))
        }
    }

    /// The frame both format versions share: a count of 1…1024 entries, each starting with its
    /// index in the segment, strictly increasing; `entry` reads the rest of one entry.
    static func decodeEntries<Entry>(_ bytes: [UInt8], _ entry: (inout ByteReader, Int) throws -> Entry) throws -> [Entry] {
        var reader = ByteReader(bytes, context: "chunk segment")
        let count = Int(try reader.u16())
        guard (1...Format.chunksPerSegment).contains(count) else { throw FormatError.invalid("chunk segment count \(count)") }
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        var previous = -1
        for _ in 0..<count {
            let index = Int(try reader.u16())
            guard index < Format.chunksPerSegment, index > previous else { throw FormatError.invalid("chunk segment index \(index)") }
            previous = index
            entries.append(try entry(&reader, index))
        }
        try reader.expectEnd()
        return entries
    }
}
