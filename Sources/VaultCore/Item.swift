import VaultCrypto
import VaultFormat

/// An item in memory: its record (without its key, which lives in the locked arena), and for a
/// chunked file where each stored chunk lies.
///
/// A value type whose fields live in one heap object, copied on write: a vault holds its items
/// in one dictionary, whose buckets would each take the whole record inline (about 200 bytes)
/// at up to twice the item count (docs/PERFORMANCE.md, "Memory after mount").
struct Item {
    private var fields: Fields

    /// `@unchecked Sendable` holds as it does for an array's storage: an object is changed only
    /// while one `Item` alone refers to it (`unique`), so one that two share never changes.
    private final class Fields: @unchecked Sendable {
        var record: ItemRecord
        var key: SecretArena.Slot?
        var memberKey: SecretArena.Slot?
        var chunks: [Int: StoredRef]
        var holds: Int

        init(record: ItemRecord, key: SecretArena.Slot? = nil, memberKey: SecretArena.Slot? = nil, chunks: [Int: StoredRef] = [:],
             holds: Int = 0) {
            self.record = record; self.key = key; self.memberKey = memberKey; self.chunks = chunks; self.holds = holds
        }

        func copy() -> Fields { Fields(record: record, key: key, memberKey: memberKey, chunks: chunks, holds: holds) }
    }

    init(record: ItemRecord) { fields = Fields(record: record) }

    private mutating func unique() -> Fields {
        if !isKnownUniquelyReferenced(&fields) { fields = fields.copy() }
        return fields
    }

    var record: ItemRecord {
        _read { yield fields.record }
        _modify { let fields = unique(); yield &fields.record }
    }
    /// Format 1 (and a format-1 item of an upgraded vault): the item key ITK.
    var key: SecretArena.Slot? {
        get { fields.key }
        _modify { let fields = unique(); yield &fields.key }
    }
    /// Format 2: the key of the packed member. The record's member holds zeros in its place.
    var memberKey: SecretArena.Slot? {
        get { fields.memberKey }
        _modify { let fields = unique(); yield &fields.memberKey }
    }
    var chunks: [Int: StoredRef] {
        _read { yield fields.chunks }
        _modify { let fields = unique(); yield &fields.chunks }
    }
    /// Every key the item holds in the arena: its item key, its member's, its chunks'.
    var keySlots: [SecretArena.Slot] {
        [key, memberKey].compactMap { $0 } + chunks.values.compactMap(\.key)
    }
    /// Open file handles: an item without links stays readable while held (unlink of an open file).
    var holds: Int {
        get { fields.holds }
        _modify { let fields = unique(); yield &fields.holds }
    }

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

extension ItemRecord.Member {
    /// What a format-2 member's record holds in memory where its key goes (the key is in the
    /// arena, `Item.memberKey`): zeros of a key's length, one array for every item rather than
    /// one each. Made at run time, so that wiping it (zeros over zeros) writes to the heap.
    static let keyPlaceholder = [UInt8](unsafeUninitializedCapacity: Format.keySize) { buffer, count in
        buffer.initialize(repeating: 0)
        count = Format.keySize
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
