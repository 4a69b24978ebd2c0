import VaultFormat

/// Decrypted chunks in memory, least recently used first out, with write-back: a dirty chunk is
/// sealed into a free file when it is evicted or at the commit. The limit bounds memory whatever
/// the size of the files (R-FS-4).
struct ChunkCache {
    struct Key: Hashable { var item: UInt64; var index: Int }

    struct Entry {
        /// The chunk's stored bytes; bytes past the end read as zeros.
        var bytes: [UInt8]
        var dirty: Bool
        var lastUse: UInt64
    }

    let limit: Int
    private(set) var entries: [Key: Entry] = [:]
    /// The cached chunk indexes of each item: deleting a file must not scan the whole cache.
    private var indexes: [UInt64: Set<Int>] = [:]
    private(set) var byteCount = 0
    private var tick: UInt64 = 0

    init(limitBytes: Int) { limit = max(limitBytes, 2 * Format.payloadSize) }

    var isOverLimit: Bool { byteCount > limit }
    var hasDirtyEntries: Bool { entries.values.contains { $0.dirty } }
    var dirtyKeys: [Key] { entries.filter { $0.value.dirty }.map(\.key).sorted { ($0.item, $0.index) < ($1.item, $1.index) } }

    mutating func get(_ key: Key) -> [UInt8]? {
        guard entries[key] != nil else { return nil }
        tick += 1
        entries[key]!.lastUse = tick
        return entries[key]!.bytes
    }

    func isDirty(_ key: Key) -> Bool { entries[key]?.dirty ?? false }

    mutating func put(_ key: Key, bytes: [UInt8], dirty: Bool) {
        tick += 1
        let old = entries.updateValue(Entry(bytes: bytes, dirty: dirty || (entries[key]?.dirty ?? false), lastUse: tick), forKey: key)
        byteCount += capacityCost(bytes) - (old.map { capacityCost($0.bytes) } ?? 0)
        if old == nil { indexes[key.item, default: []].insert(key.index) }
    }

    /// Changes a chunk in place, so a 4 KiB write does not copy 256 KiB twice.
    mutating func modify(_ key: Key, _ body: (inout [UInt8]) -> Void) {
        guard var entry = entries.removeValue(forKey: key) else { return }
        byteCount -= capacityCost(entry.bytes)
        body(&entry.bytes)
        tick += 1
        entry.dirty = true
        entry.lastUse = tick
        byteCount += capacityCost(entry.bytes)
        entries[key] = entry
    }

    mutating func markClean(_ key: Key) { entries[key]?.dirty = false }

    mutating func remove(_ key: Key) {
        guard let old = entries.removeValue(forKey: key) else { return }
        byteCount -= capacityCost(old.bytes)
        indexes[key.item]?.remove(key.index)
        if indexes[key.item]?.isEmpty == true { indexes[key.item] = nil }
    }

    mutating func removeItem(_ item: UInt64, fromIndex first: Int = 0) {
        for index in indexes[item] ?? [] where index >= first { remove(Key(item: item, index: index)) }
    }

    /// The least recently used entry, the next to go.
    func evictionCandidate() -> Key? { entries.min { $0.value.lastUse < $1.value.lastUse }?.key }

    mutating func removeAll() { entries = [:]; indexes = [:]; byteCount = 0 }

    private func capacityCost(_ bytes: [UInt8]) -> Int { max(bytes.capacity, bytes.count) }
}
