import VaultCrypto
import VaultFormat

/// Decrypted chunks in memory and what is under way for them outside the vault's lock: the
/// cache (dirty chunks waiting for the commit), chunks being written behind (their bytes stay
/// readable until stored), chunks being loaded (other readers wait for the load), and where each
/// file is being written and read sequentially. Knows nothing of items, files or keys: the vault
/// asks it, and tells it what became of a chunk.
///
/// Invariant: a chunk's newest bytes are in the cache if they are there, else in its flight,
/// else in storage; a flight's token says which write-behind of a chunk is the latest. A flight
/// shares the cache's buffer (the write-behind seals from it outside the lock), so a change to
/// that chunk first gives the cache a copy of its own (`ChunkCache.change`, which does the same
/// for a buffer lent to a reply).
struct ChunkStore {
    typealias Key = ChunkCache.Key

    private(set) var cache: ChunkCache
    /// Chunks being written behind (WriteBehind.swift).
    private var flights: [Key: Flight] = [:]
    private var nextFlightToken: UInt64 = 0
    /// Each file's sequential write run.
    private var runs: [UInt64: SequentialRun] = [:]
    /// Chunks being loaded outside the lock (ChunkLoad.swift).
    private var loads: [Key: LoadInProgress] = [:]
    /// Each file's last few reads (`noteRead`).
    private var recentReads: [UInt64: RecentReads] = [:]
    /// Each item's content version: moved on by every change of its content this session (0:
    /// none). The file system keeps the kernel's page cache of a file across opens only while
    /// the version it was cached at is current.
    private var contentVersions: [UInt64: UInt64] = [:]
    private var lastContentVersion: UInt64 = 0

    /// Chunks loaded ahead of a sequential reader, each on a load queue of its own. Not two:
    /// with the cores busy (a build beside), a cold 1 GiB `dd` took 1.4–2.2 s with two, the
    /// reader waiting for loads that had not been scheduled yet, and 0.7–0.8 s with four. Eight,
    /// not four: a cold 512 MiB `dd` 0.55 s against 0.60, `cat` 0.53 against 0.55; sixteen gave
    /// no more (docs/PERFORMANCE.md, "Eight loads ahead"). 2 MiB per reader.
    static let readAhead = 8
    /// Chunks kept behind a sequential reader (`dropRead`).
    static let readBehind = 2

    /// `lockBudget` as for `ChunkCache`: by default what RLIMIT_MEMLOCK leaves.
    init(cacheBytes: Int, lockBudget: Int?? = nil) { cache = ChunkCache(limitBytes: cacheBytes, lockBudget: lockBudget) }

    /// Dirty chunks wait for the commit, or a write-behind is still running.
    var hasChanges: Bool { cache.hasDirtyEntries || !flights.isEmpty }
    /// Whether a chunk is being loaded outside the lock.
    var isLoading: Bool { !loads.isEmpty }
    var hasFlights: Bool { !flights.isEmpty }

    /// A copy of the newest bytes of a chunk held in memory.
    mutating func cached(_ key: Key) -> [UInt8]? { cached(key, in: 0..<ChunkOffsets.chunkSize)?.bytes }

    /// The bytes of `range` (shorter past the chunk's end) of the newest held in memory, lent:
    /// cached, or being written behind (then cached clean, since the write-behind stores these
    /// very bytes, or makes them dirty again if it fails).
    mutating func cached(_ key: Key, in range: Range<Int>) -> PlaintextSlice? {
        if let cached = cache.slice(key, in: range) { return cached }
        guard let flight = flights[key] else { return nil }
        cache.put(key, buffer: flight.buffer, dirty: false)
        return cache.slice(key, in: range)
    }

    /// Whether the chunk's newest bytes are in memory (no load needed); counts as a use.
    mutating func isInMemory(_ key: Key) -> Bool { cache.bytes(key, in: 0..<0) != nil || flights[key] != nil }

    func contains(_ key: Key) -> Bool { cache.contains(key) }
    /// The item's chunks whose bytes are in memory, cached or being written behind: data that
    /// storage may not hold yet.
    func indexesInMemory(of item: UInt64) -> Set<Int> {
        Set(cache.indexesHoldingBytes(of: item)).union(flights.keys.lazy.filter { $0.item == item }.map(\.index))
    }
    mutating func get(_ key: Key) -> [UInt8]? { cache.get(key) }
    mutating func put(_ key: Key, bytes: [UInt8], dirty: Bool, capacity: Int = 0) {
        cache.put(key, bytes: bytes, dirty: dirty, capacity: capacity)
    }
    mutating func put(_ key: Key, buffer: PlaintextBuffer, dirty: Bool) { cache.put(key, buffer: buffer, dirty: dirty) }
    mutating func write(_ key: Key, _ bytes: RawSpan, at offset: Int, reserveChunk: Bool = false) {
        cache.write(key, bytes, at: offset, reserveChunk: reserveChunk)
    }
    mutating func truncate(_ key: Key, to count: Int) { cache.truncate(key, to: count) }
    func storedCount(_ key: Key) -> Int? { cache.storedCount(key) }
    mutating func markClean(_ key: Key) { cache.markClean(key) }
    mutating func markDirty(_ key: Key) { cache.markDirty(key) }
    mutating func remove(_ key: Key) { cache.remove(key) }
    func isDirty(_ key: Key) -> Bool { cache.isDirty(key) }
    var dirtyKeys: [Key] { cache.dirtyKeys }

    var isOverLimit: Bool { cache.isOverLimit }

    /// The next chunk to go when the cache is over its limit.
    var evictionCandidate: Key? { cache.isOverLimit ? cache.evictionCandidate() : nil }

    // MARK: Items

    func contentVersion(_ item: UInt64) -> UInt64 { contentVersions[item] ?? 0 }

    /// The item's content changes (a write, a truncate; anything else that replaces it must say
    /// so too, or the kernel may go on reading what it cached before).
    mutating func contentChanges(_ item: UInt64) {
        lastContentVersion += 1
        contentVersions[item] = lastContentVersion
    }

    /// Forgets chunks from `first` on (truncate), and their write-behinds: what those store is
    /// no longer wanted.
    mutating func removeChunks(of item: UInt64, from first: Int) {
        cache.removeItem(item, fromIndex: first)
        dropFlights(item, from: first)
    }

    /// Forgets everything of a deleted item.
    mutating func forget(_ item: UInt64) {
        removeChunks(of: item, from: 0)
        runs[item] = nil
        forgetReads(of: item)
    }

    /// A sync replaced the item's content (or removed it): its chunks go, and its version moves
    /// on, so that the kernel does not keep what it cached (FileSystem.open's keep_cache).
    mutating func contentReplaced(_ item: UInt64) {
        forget(item)
        contentChanges(item)
    }

    // MARK: Sequential writes and write-behind

    /// Notes a write of `start..<end` and returns the chunks it completed within one
    /// sequential run: those are not written again soon, so they can go to storage now. A
    /// database rewriting pages never completes a chunk this way and keeps its chunks in memory.
    mutating func chunksCompletedSequentially(_ id: UInt64, _ start: UInt64, _ end: UInt64) -> Range<Int> {
        var run = runs[id] ?? SequentialRun(start: start, end: start)
        if run.end != start { run = SequentialRun(start: start, end: start) }
        run.end = end
        runs[id] = run
        let first = ChunkOffsets.chunkCount(forSize: run.start)  // the first chunk the run began at or before
        let firstEnding = ChunkOffsets.chunkIndex(start)          // the first chunk whose end this write reaches
        let last = ChunkOffsets.chunkIndex(end)                   // chunks before this one end at or before `end`
        let lower = max(first, firstEnding)
        return lower < last ? lower..<last : 0..<0
    }

    /// Hands a cached chunk to a write-behind: clean in the cache, its buffer shared with a
    /// flight, which the write-behind seals from (no copy). Returns the flight's token and the
    /// buffer; nil when the chunk is not cached.
    mutating func startFlight(_ key: Key) -> (token: UInt64, body: PlaintextBuffer)? {
        guard let buffer = cache.buffer(key) else { return nil }
        nextFlightToken += 1
        flights[key] = Flight(token: nextFlightToken, buffer: buffer)
        cache.markClean(key)
        return (nextFlightToken, buffer)
    }

    /// Ends the flight of a finished write-behind; returns its buffer when it was the chunk's
    /// latest (a later write-behind, a truncate or a delete makes it stale: nil).
    mutating func finishFlight(_ key: Key, token: UInt64) -> PlaintextBuffer? {
        guard let flight = flights[key], flight.token == token else { return nil }
        flights[key] = nil
        return flight.buffer
    }

    /// A chunk its write-behind stored leaves the cache, unless something changed it since (its
    /// buffer is no longer the flight's) or it is dirty again: a long sequential write streams
    /// through a few blocks instead of filling the cache with chunks nobody asked to read (the
    /// daemon's memory during a write, issue 17); a later read loads it again.
    mutating func dropStored(_ key: Key, _ buffer: PlaintextBuffer) {
        if cache.buffer(key) === buffer, !cache.isDirty(key) { cache.remove(key) }
    }

    /// The chunks `readBehind` chunks and more behind a sequential reader at `key` leave the
    /// cache, unless dirty or being written behind: a long read streams through a few blocks
    /// instead of filling the cache with chunks the kernel's page cache holds now (a cold read of
    /// 512 MiB took the daemon to 290 MiB, and faulting that memory in was a tenth of its time).
    /// Not the chunk just behind: the kernel's read-ahead requests reach the vault a little out of
    /// order. And a few more than the one `readBehind` back, which a reader whose requests there
    /// all came out of order (not sequential) passed without a drop.
    mutating func dropRead(behind key: Key) {
        let last = key.index - Self.readBehind
        guard last >= 0 else { return }
        for index in max(0, last - Self.readBehind)...last { dropIfClean(Key(item: key.item, index: index)) }
    }

    /// A small file's chunk pushed whole into the kernel's page cache at its open leaves the
    /// cache unless dirty or being written behind: the kernel answers the file's reads, and
    /// reading every file of the benchmark's tree left the daemon at 202 MiB, the whole tree
    /// decrypted twice (docs/PERFORMANCE.md). A read the kernel sends after all (its pages
    /// evicted) loads it again, which costs a small file little. A chunk read at random stays
    /// although its pages are pushed too: the load of 256 KiB is what a 4 KiB read would pay
    /// again after the kernel drops them (fio with `--invalidate=1` does at each pass over its
    /// file: ten times the loads without the cache).
    mutating func dropPushed(_ key: Key) { dropIfClean(key) }

    private mutating func dropIfClean(_ key: Key) {
        if cache.contains(key), !cache.isDirty(key), flights[key] == nil { cache.remove(key) }
    }

    /// After a failed write-behind (the latest of its chunk): the chunk is dirty again. The cache
    /// holds its newest bytes if it holds it at all (the flight's buffer, or a copy a later write
    /// changed), else they are the flight's.
    mutating func failedFlight(_ key: Key, _ buffer: PlaintextBuffer) {
        if cache.contains(key) { cache.markDirty(key) } else { cache.put(key, buffer: buffer, dirty: true) }
    }

    /// A write of the chunk now is newer than any write-behind of it.
    mutating func dropFlight(_ key: Key) { flights[key] = nil }

    /// Forgets write-behinds of these chunks: what they store is no longer wanted.
    mutating func dropFlights(_ id: UInt64, from first: Int = 0) {
        for key in flights.keys where key.item == id && key.index >= first { flights[key] = nil }
    }

    // MARK: Reads

    /// Notes a read of `offset..<end`. Returns whether it is sequential: it starts at 0, or
    /// touches one of the file's last few reads (starts where one ended, or ends where one
    /// started); then chunks are loaded ahead and those behind it leave the cache. And whether
    /// it is at random: away from where the previous read ended by more than the kernel's
    /// read-ahead sends out of order.
    mutating func noteRead(_ id: UInt64, offset: UInt64, end: UInt64) -> (sequential: Bool, atRandom: Bool) {
        let recent = recentReads[id] ?? RecentReads()
        let previous = recent.lastEnd
        let sequential = offset == 0 || recent.touch(offset..<end)
        let near = previous.map { (offset > $0 ? offset - $0 : $0 - offset) <= Self.readAheadReach } ?? false
        recentReads[id, default: RecentReads()].note(offset..<end)
        return (sequential, !sequential && !near)
    }

    /// How far from the previous read a read of the kernel's read-ahead may land: its requests
    /// are served by several threads, so they reach the vault a little out of order.
    static let readAheadReach: UInt64 = 4 << 20

    /// Forgets the file's last reads (its last handle closed): its next read starts afresh.
    mutating func forgetReads(of id: UInt64) { recentReads[id] = nil }

    /// Files whose last reads are kept.
    var filesWithReads: Int { recentReads.count }

    func loading(_ key: Key) -> LoadInProgress? { loads[key] }

    /// Registers a load, so that other readers wait for it instead of loading again.
    mutating func startLoad(_ key: Key) { loads[key] = LoadInProgress() }

    /// Ends a load and wakes whoever waits for it.
    mutating func endLoad(_ key: Key) { loads.removeValue(forKey: key)?.finish() }

    /// Erases plaintext (R-MEM-3); see `ChunkCache.removeAll` for `sparingLent`.
    mutating func removeAll(sparingLent: Bool = false) {
        cache.removeAll(sparingLent: sparingLent)
        flights = [:]
    }
}

/// A file's last few reads. The kernel sends a stream's read-ahead a request or two ahead of
/// the one it waits for, and the daemon's threads serve them a little out of order: a request
/// served early starts where no read has ended yet, and the late one where the last read did
/// not end. Tested against the last read only, both counted as not sequential (2 of the 512
/// requests of two fio readers here, and every request while such swaps go on), so they loaded
/// nothing ahead and dropped nothing behind.
struct RecentReads {
    static let kept = 8
    /// Oldest first.
    private var ranges: [Range<UInt64>] = []

    var lastEnd: UInt64? { ranges.last?.upperBound }

    /// Whether `range` starts where one of them ended or ends where one started.
    func touch(_ range: Range<UInt64>) -> Bool {
        ranges.contains { $0.upperBound == range.lowerBound || $0.lowerBound == range.upperBound }
    }

    mutating func note(_ range: Range<UInt64>) {
        if ranges.count == Self.kept { ranges.removeFirst() }
        ranges.append(range)
    }
}

/// A chunk being written behind: its bytes (newer than what its stored reference holds) and the
/// token that says which write of it is the latest.
struct Flight {
    var token: UInt64
    var buffer: PlaintextBuffer
}

/// Where a file is being written sequentially: the run of bytes written back to back.
struct SequentialRun {
    var start: UInt64
    var end: UInt64
}
