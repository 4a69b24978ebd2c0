import VaultCrypto
import VaultFormat

/// An item in memory: its record (without its key, which lives in the locked arena), and for a
/// chunked file where each stored chunk lies.
struct Item {
    var record: ItemRecord
    /// Format 1 (and a format-1 item of an upgraded vault): the item key ITK.
    var key: SecretArena.Slot?
    /// Format 2: the key of the packed member. The record's member holds zeros in its place.
    var memberKey: SecretArena.Slot?
    var chunks: [Int: StoredRef] = [:]
    /// Open file handles: an item without links stays readable while held (unlink of an open file).
    var holds = 0

    var isFile: Bool { record.type == .file }
    var isFolder: Bool { record.type == .folder }

    var packedMember: ItemRecord.Member? {
        if case .packed(let member) = record.layout { member } else { nil }
    }

    /// Chunk indexes that a file of this size can have.
    var chunkCount: Int { ChunkOffsets.chunkCount(forSize: record.size) }

    /// Segment numbers that hold at least one chunk.
    var segmentIndexes: Set<Int> { Set(chunks.keys.map(ChunkOffsets.segment(ofChunk:))) }

    /// The stored chunks of a segment, by index within it.
    func segmentEntries(_ segment: Int) -> [(indexInSegment: Int, ref: StoredRef)] {
        let indexes = ChunkOffsets.chunks(inSegment: segment)
        let base = indexes.lowerBound
        return indexes.compactMap { index in chunks[index].map { (index - base, $0) } }
    }

    /// Every file number this item's content uses.
    var fileNumbers: [UInt64] {
        var numbers = chunks.values.map(\.fileNumber)
        if let member = packedMember { numbers.append(member.fileNumber) }
        return numbers
    }
}

/// What a pack holds: the bytes its live members take, the items they belong to, and the end of
/// the space that neither the committed root nor the state in memory may lose.
struct PackInfo {
    var liveBytes = 0
    var members: Set<UInt64> = []
    /// New members go after this offset: it covers every member the committed root references,
    /// even deleted ones, until the next commit.
    var reservedEnd = 0
}
