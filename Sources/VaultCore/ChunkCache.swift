import VaultCrypto
import VaultFormat

/// Decrypted chunks in memory, least recently used first out, with write-back: a dirty chunk is
/// sealed into a free file when it is evicted or at the commit. The limit bounds memory whatever
/// the size of the files (R-FS-4). The bytes live in a `PlaintextPool` (R-SEC-5): locked in RAM
/// as far as RLIMIT_MEMLOCK allows, never in a core dump, zeroed when a chunk leaves the cache
/// and at lock. What goes out of it is a copy the caller owns, or a `PlaintextSlice` lent to a
/// reply: a chunk whose buffer is held elsewhere is copied before it changes.
struct ChunkCache {
    struct Key: Hashable { var item: UInt64; var index: Int }

    struct Entry {
        /// The chunk's stored bytes; bytes past the end read as zeros.
        var buffer: PlaintextBuffer
        var dirty: Bool
        var lastUse: UInt64
    }

    /// Locked memory left to keys added after the cache takes its share: a vault that gains
    /// 30,000 files while mounted still has their keys locked (SecretArena: 64 KiB per 2,048).
    static let keyHeadroom = 1 << 20

    let limit: Int
    let pool: PlaintextPool
    private(set) var entries: [Key: Entry] = [:]
    /// The cached chunk indexes of each item: deleting a file must not scan the whole cache.
    private var indexes: [UInt64: Set<Int>] = [:]
    private(set) var byteCount = 0
    private var tick: UInt64 = 0

    /// `lockBudget`: bytes of the cache to lock, nil for all; by default what RLIMIT_MEMLOCK
    /// leaves after the keys locked so far and `keyHeadroom`.
    init(limitBytes: Int, lockBudget: Int?? = nil) {
        let limit = max(limitBytes, 2 * Format.payloadSize)
        let budget = lockBudget ?? MemoryLockLimit.remaining().map { max(0, $0 - Self.keyHeadroom) }
        self.limit = limit
        pool = PlaintextPool(lockBudget: budget.map { min($0, limit) })
    }

    /// How much of the cache can be locked in RAM (at most the limit).
    var lockableBytes: Int { pool.lockBudget ?? limit }

    var isOverLimit: Bool { byteCount > limit }
    var hasDirtyEntries: Bool { entries.values.contains { $0.dirty } }
    var dirtyKeys: [Key] { entries.filter { $0.value.dirty }.map(\.key).sorted { ($0.item, $0.index) < ($1.item, $1.index) } }

    func contains(_ key: Key) -> Bool { entries[key] != nil }

    /// A copy of the chunk's stored bytes; counts as a use.
    mutating func get(_ key: Key) -> [UInt8]? {
        guard let entry = use(key) else { return nil }
        return entry.buffer.allBytes
    }

    /// A copy of the stored bytes of the chunk within `range` (shorter, or empty, past its end);
    /// counts as a use.
    mutating func bytes(_ key: Key, in range: Range<Int>) -> [UInt8]? {
        guard let entry = use(key) else { return nil }
        let end = min(range.upperBound, entry.buffer.count)
        return range.lowerBound < end ? entry.buffer.bytes(range.lowerBound..<end) : []
    }

    /// The stored bytes of the chunk within `range` (shorter, or empty, past its end), lent:
    /// counts as a use.
    mutating func slice(_ key: Key, in range: Range<Int>) -> PlaintextSlice? {
        guard let entry = use(key) else { return nil }
        return PlaintextSlice(entry.buffer, within: range)
    }

    func isDirty(_ key: Key) -> Bool { entries[key]?.dirty ?? false }

    /// Bytes stored for the chunk.
    func storedCount(_ key: Key) -> Int? { entries[key]?.buffer.count }

    /// The chunk's buffer itself, for the chunk store to share with a write-behind.
    func buffer(_ key: Key) -> PlaintextBuffer? { entries[key]?.buffer }

    /// Caches a copy of `bytes`, in a block with room for `capacity` bytes at least.
    mutating func put(_ key: Key, bytes: [UInt8], dirty: Bool, capacity: Int = 0) {
        let buffer = PlaintextBuffer(pool: pool, capacity: max(capacity, bytes.count))
        buffer.write(bytes[...], at: 0)
        put(key, buffer: buffer, dirty: dirty)
    }

    /// Caches `buffer` itself, no copy: a load decrypted into it, or a write-behind hands it back.
    mutating func put(_ key: Key, buffer: PlaintextBuffer, dirty: Bool) {
        tick += 1
        let old = entries.updateValue(Entry(buffer: buffer, dirty: dirty || (entries[key]?.dirty ?? false), lastUse: tick), forKey: key)
        byteCount += buffer.capacity - (old?.buffer.capacity ?? 0)
        if old == nil { indexes[key.item, default: []].insert(key.index) }
    }

    /// Writes `bytes` at `offset` of a cached chunk, in place; `reserveChunk` makes room for a
    /// whole chunk first (a sequential writer fills it, so it does not move block by block).
    mutating func write(_ key: Key, _ bytes: RawSpan, at offset: Int, reserveChunk: Bool = false) {
        change(key) { buffer in
            if reserveChunk { buffer.reserve(Format.payloadSize) }
            buffer.write(bytes, at: offset)
        }
    }

    /// Cuts a cached chunk to `count` bytes, zeroing the rest.
    mutating func truncate(_ key: Key, to count: Int) {
        guard let entry = entries[key], entry.buffer.count > count else { return }
        change(key) { $0.truncate(to: count) }
    }

    mutating func markClean(_ key: Key) { entries[key]?.dirty = false }
    mutating func markDirty(_ key: Key) { entries[key]?.dirty = true }

    mutating func remove(_ key: Key) {
        guard let old = entries.removeValue(forKey: key) else { return }
        byteCount -= old.buffer.capacity
        indexes[key.item]?.remove(key.index)
        if indexes[key.item]?.isEmpty == true { indexes[key.item] = nil }
    }

    /// The item's cached chunks that hold bytes (a hole loaded is cached empty).
    func indexesHoldingBytes(of item: UInt64) -> [Int] {
        (indexes[item] ?? []).filter { (entries[Key(item: item, index: $0)]?.buffer.count ?? 0) > 0 }
    }

    mutating func removeItem(_ item: UInt64, fromIndex first: Int = 0) {
        for index in indexes[item] ?? [] where index >= first { remove(Key(item: item, index: index)) }
    }

    /// The least recently used entry, the next to go.
    func evictionCandidate() -> Key? { entries.min { $0.value.lastUse < $1.value.lastUse }?.key }

    /// Forgets every chunk and zeroes all of the pool's memory (the lock). `sparingLent`: a
    /// buffer still held elsewhere, lent to a reply being sent, is zeroed only when its holder
    /// lets it go (a reopen while mounted, when reads go on).
    mutating func removeAll(sparingLent: Bool = false) {
        entries = [:]; indexes = [:]; byteCount = 0
        if !sparingLent { pool.wipeAll() }
    }

    /// For tests: the block that holds a cached chunk.
    func block(_ key: Key) -> PlaintextPool.Block? { entries[key]?.buffer.currentBlock }

    private mutating func use(_ key: Key) -> Entry? {
        guard entries[key] != nil else { return nil }
        tick += 1
        entries[key]!.lastUse = tick
        return entries[key]
    }

    /// Changes a chunk in place: dirty, used now, its cost brought up to date. A buffer held
    /// elsewhere too (a write-behind sealing it, a reply sent from it) must not change under
    /// its holder: the chunk gets a copy first.
    private mutating func change(_ key: Key, _ body: (PlaintextBuffer) -> Void) {
        guard entries[key] != nil else { return }
        if !isKnownUniquelyReferenced(&entries[key]!.buffer) { entries[key]!.buffer = entries[key]!.buffer.copy() }
        let buffer = entries[key]!.buffer
        byteCount -= buffer.capacity
        body(buffer)
        byteCount += buffer.capacity
        tick += 1
        entries[key]!.dirty = true
        entries[key]!.lastUse = tick
    }
}
