import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// The chunk store alone: which chunks a sequential write completes, which bytes of a chunk are
/// the newest while it is written behind, and what a deleted or truncated file leaves behind.
@Suite struct ChunkStoreTests {
    static let chunk = UInt64(Format.payloadSize)
    static func key(_ item: UInt64, _ index: Int) -> ChunkStore.Key { ChunkStore.Key(item: item, index: index) }

    @Test func sequentialRunsCompleteChunks() {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let step = Self.chunk / 4
        var completed: [Int] = []
        for n in 0..<9 {
            completed += Array(store.chunksCompletedSequentially(7, UInt64(n) * step, UInt64(n + 1) * step))
        }
        #expect(completed == [0, 1], "a chunk is complete when the run has written its last byte")
        // A write elsewhere starts a new run: the chunk it lands in was not written from its start.
        let elsewhere = store.chunksCompletedSequentially(7, 10 * Self.chunk + 5, 11 * Self.chunk)
        #expect(elsewhere.isEmpty)
        let continued = store.chunksCompletedSequentially(7, 11 * Self.chunk, 13 * Self.chunk)
        #expect(continued == 11..<13)
        // Runs are per file.
        let other = store.chunksCompletedSequentially(8, 0, Self.chunk)
        #expect(other == 0..<1)
    }

    @Test func aChunkInFlightIsReadFromItsFlightAndALaterWriteWins() throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let key = Self.key(1, 0)
        store.put(key, bytes: [1, 2, 3], dirty: true)
        let started = store.startFlight(key)
        let (token, body) = try #require(started)
        #expect(body.allBytes == [1, 2, 3])
        #expect(!store.isDirty(key), "the write-behind stores it: clean in the cache")
        #expect(store.hasFlights && store.hasChanges)
        store.remove(key)  // evicted while in flight
        let cached = store.cached(key)
        #expect(cached == [1, 2, 3], "the flight's bytes are the newest")
        let four: [UInt8] = [4]
        store.write(key, four.span.bytes, at: 0)
        let restarted = store.startFlight(key)
        let newer = try #require(restarted).token
        let stale = store.finishFlight(key, token: token)
        #expect(stale == nil, "a stale write-behind publishes nothing")
        let latest = store.finishFlight(key, token: newer)
        #expect(latest?.allBytes == [4, 2, 3])
        #expect(!store.hasFlights)
    }

    /// The write-behind seals the cache's own buffer, outside the vault's lock: a write or a
    /// truncate of the chunk meanwhile goes to a copy, never into the bytes being sealed.
    @Test func aChangeDuringAFlightGoesToACopy() throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let key = Self.key(2, 0)
        store.put(key, bytes: [1, 2, 3, 4], dirty: true)
        let started = store.startFlight(key)
        let (token, body) = try #require(started)
        let nine: [UInt8] = [9]
        store.write(key, nine.span.bytes, at: 1)
        #expect(body.allBytes == [1, 2, 3, 4], "the bytes being sealed changed")
        #expect(store.cached(key) == [1, 9, 3, 4])
        #expect(store.isDirty(key), "the later write waits for the next write-behind or the commit")
        store.truncate(key, to: 2)
        #expect(body.allBytes == [1, 2, 3, 4])
        // The write-behind fails (a full disk): the later bytes stay, still dirty.
        let finished = store.finishFlight(key, token: token)
        let failed = try #require(finished)
        store.failedFlight(key, failed)
        #expect(store.cached(key) == [1, 9] && store.isDirty(key), "a failed write-behind brought back older bytes")
    }

    /// A read's reply is sent from the cache's own memory (`PlaintextSlice`), outside the lock:
    /// a write or a cut meanwhile goes to a copy, and an eviction leaves the lent bytes whole
    /// until the reply lets them go, then zeroed.
    @Test func bytesLentToAReplyNeverChangeAndAreZeroedWhenLetGo() throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let key = Self.key(5, 0)
        let pool = store.cache.pool
        let stored = [UInt8](repeating: 0x3C, count: 6000)
        store.put(key, bytes: stored, dirty: false)
        var block: PlaintextPool.Block?
        do {
            let cached = store.cached(key, in: 1000..<5000)
            let lent = try #require(cached)
            block = store.cache.block(key)
            let sevens = [UInt8](repeating: 0x77, count: 3000)
            store.write(key, sevens.span.bytes, at: 2000)
            #expect(lent.bytes == Array(stored[1000..<5000]), "a write changed bytes lent to a reply")
            #expect(store.cached(key) == Array(stored[0..<2000]) + [UInt8](repeating: 0x77, count: 3000) + Array(stored[5000...]))
            #expect(store.isDirty(key))
            store.truncate(key, to: 100)
            #expect(lent.bytes == Array(stored[1000..<5000]), "a cut changed bytes lent to a reply")
            store.remove(key)
            #expect(pool.currentBytes(of: try #require(block)).prefix(6000) == stored[...], "zeroed while lent")
        }
        #expect(pool.currentBytes(of: try #require(block)).allSatisfy { $0 == 0 }, "a lent chunk kept its plaintext after the reply")
        #expect(pool.inUseByteCount == 0)
    }

    /// An unshare's reopen while mounted forgets the cache while reads go on: a reply's lent
    /// bytes stay whole until it lets them go. The lock zeroes them at once.
    @Test(arguments: [true, false])
    func forgettingTheCacheSparesLentBytesOnlyWhenAsked(sparing: Bool) throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let key = Self.key(7, 0)
        let pool = store.cache.pool
        store.put(key, bytes: [UInt8](repeating: 0x5A, count: 4096), dirty: false)
        let block = try #require(store.cache.block(key))
        do {
            let cached = store.cached(key, in: 0..<4096)
            let lent = try #require(cached)
            store.removeAll(sparingLent: sparing)
            #expect(lent.bytes.allSatisfy { $0 == (sparing ? 0x5A : 0) }, "sparing \(sparing)")
        }
        #expect(pool.currentBytes(of: block).allSatisfy { $0 == 0 })
        #expect(pool.inUseByteCount == 0)
    }

    /// Nothing else holds a cached chunk: a write changes it in place, no copy.
    @Test func aChunkNotLentChangesInPlace() throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let key = Self.key(6, 0)
        store.put(key, bytes: [1, 2, 3], dirty: false)
        _ = store.cached(key, in: 0..<3)?.bytes
        let before = store.cache.block(key)?.location
        let nine: [UInt8] = [9]
        store.write(key, nine.span.bytes, at: 0)
        #expect(store.cache.block(key)?.location == before && store.cached(key) == [9, 2, 3])
    }

    @Test func aFailedFlightOfAnEvictedChunkIsCachedDirtyAgain() throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let key = Self.key(2, 1)
        store.put(key, bytes: [5, 6], dirty: true)
        let started = store.startFlight(key)
        let token = try #require(started).token
        store.remove(key)
        let finished = store.finishFlight(key, token: token)
        let failed = try #require(finished)
        store.failedFlight(key, failed)
        #expect(store.cached(key) == [5, 6] && store.isDirty(key))
    }

    /// Evicted while its write-behind still seals it: the block is zeroed once the flight ends.
    @Test func aChunkEvictedDuringItsFlightIsZeroedWhenTheFlightEnds() throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let key = Self.key(4, 0)
        let pool = store.cache.pool
        store.put(key, bytes: [UInt8](repeating: 0xA5, count: 5000), dirty: true)
        var block: PlaintextPool.Block?
        do {
            let started = store.startFlight(key)
            let (token, body) = try #require(started)
            block = body.currentBlock
            store.remove(key)
            #expect(pool.currentBytes(of: body.currentBlock).prefix(5000).allSatisfy { $0 == 0xA5 }, "zeroed while being sealed")
            let finished = store.finishFlight(key, token: token)
            #expect(finished != nil)
        }
        let freed = try #require(block)
        #expect(pool.currentBytes(of: freed).allSatisfy { $0 == 0 }, "an evicted chunk kept its plaintext after its write-behind")
        #expect(pool.inUseByteCount == 0)
    }

    @Test func truncateAndDeleteForgetChunksAndFlights() throws {
        var store = ChunkStore(cacheBytes: 8 << 20)
        for index in 0..<4 { store.put(Self.key(3, index), bytes: [UInt8(index)], dirty: true) }
        let started = store.startFlight(Self.key(3, 3))
        let token = try #require(started).token
        store.removeChunks(of: 3, from: 2)
        #expect(store.dirtyKeys == [Self.key(3, 0), Self.key(3, 1)])
        let dropped = store.finishFlight(Self.key(3, 3), token: token)
        #expect(dropped == nil)
        _ = store.noteRead(3, offset: 0, end: 100)
        store.forget(3)
        #expect(store.dirtyKeys.isEmpty && !store.hasChanges)
        let continues = store.noteRead(3, offset: 100, end: 200)
        #expect(!continues.sequential, "a deleted file's read position is gone")
    }

    @Test func readsAreSequentialWhenTheyContinue() {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let reads = [(0, 4096), (4096, 8192), (100_000, 104_096), (104_096, 108_192)].map { offset, end in
            store.noteRead(1, offset: UInt64(offset), end: UInt64(end)).sequential
        }
        #expect(reads == [true, true, false, true], "from 0, or where the last read ended")
    }

    /// The kernel's read-ahead requests reach the vault a little out of order: a read that
    /// touches one of the file's last few reads continues the stream, even if not the last.
    @Test func readsServedOutOfOrderStaySequential() {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let k: UInt64 = 128 << 10
        let reads = [(0, 1), (2, 3), (1, 2), (4, 5), (3, 4), (5, 6), (40, 41)].map { first, last in
            store.noteRead(1, offset: first * k, end: last * k).sequential
        }
        #expect(reads == [true, false, true, false, true, true, false])
    }

    /// At random: not where the last read ended, and farther from it than the kernel's
    /// read-ahead lands its requests out of order; a file's first read elsewhere than 0 too.
    @Test func readsAreAtRandomWhenTheyLandFarFromTheLast() {
        var store = ChunkStore(cacheBytes: 8 << 20)
        let reach = ChunkStore.readAheadReach
        let mib: UInt64 = 1 << 20
        let offsets: [UInt64] = [5 * mib, 0, 4096, 3 * mib, 3 * mib + 4096 + reach + 4096, mib, 0]
        let reads = offsets.map { store.noteRead(2, offset: $0, end: $0 + 4096).atRandom }
        #expect(reads == [true, false, false, false, true, true, false])
    }

    @Test func evictionOnlyOverTheLimitLeastRecentlyUsedFirst() {
        var store = ChunkStore(cacheBytes: 0)  // the limit is two chunks at least
        let part = [UInt8](repeating: 0, count: 110_000)
        for index in 0..<4 { store.put(Self.key(1, index), bytes: part, dirty: false) }
        #expect(store.evictionCandidate == nil)
        _ = store.get(Self.key(1, 0))  // a use: 1 is now the least recent
        store.put(Self.key(1, 4), bytes: part, dirty: false)
        #expect(store.evictionCandidate == Self.key(1, 1))
    }
}
