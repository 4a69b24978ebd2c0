/// A format-2 chunk-map segment (docs/FORMAT.md §13.7): each stored chunk with the random key
/// it was sealed with (scheme 2), or, for an item upgraded from format 1, the seal nonce of a
/// format-1 chunk still opened with the item's ITK (scheme 1).
public enum ChunkSegmentV2 {
    public enum Seal: Equatable, Sendable {
        /// Scheme 1: a format-1 chunk, its seal nonce N.
        case formatOne(nonce: [UInt8])
        /// Scheme 2: the chunk's own key (wiped by the owner once it is in locked memory).
        case key([UInt8])
    }

    public struct Entry: Equatable, Sendable {
        public var indexInSegment: Int
        public var file: FileRef
        public var seal: Seal
        public init(indexInSegment: Int, file: FileRef, seal: Seal) { self.indexInSegment = indexInSegment; self.file = file; self.seal = seal }
    }

    /// Bytes of a scheme-2 entry: format 1's 34 bytes plus a scheme byte and 8 more of key than nonce.
    public static let keyedEntrySize = 2 + 1 + 8 + Format.keySize

    public static func encode(_ entries: [Entry]) -> [UInt8] {
        precondition(!entries.isEmpty && entries.count <= Format.chunksPerSegment, "segment entry count")
        var writer = ByteWriter(capacity: 2 + entries.count * keyedEntrySize)
        writer.u16(UInt16(entries.count))
        for entry in entries {
            writer.u16(UInt16(entry.indexInSegment))
            switch entry.seal {
            case .formatOne(let nonce): writer.u8(1); writer.u64(entry.file.raw); writer.raw(nonce)
            case .key(let key): writer.u8(2); writer.u64(entry.file.raw); writer.raw(key)
            }
        }
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> [Entry] {
        try ChunkSegment.decodeEntries(bytes) { reader, index in
            let scheme = try reader.u8(), file = FileRef(raw: try reader.u64())
            switch scheme {
            case 1: return Entry(indexInSegment: index, file: file, seal: .formatOne(nonce: try reader.raw(Format.sealNonceSize)))
            case 2: return Entry(indexInSegment: index, file: file, seal: .key(try reader.raw(Format.keySize)))
            default: throw FormatError.invalid("chunk segment scheme \(scheme)")
            }
        }
    }
}
