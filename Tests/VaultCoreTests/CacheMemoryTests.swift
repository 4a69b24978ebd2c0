import DotSafeTestSupport
import Glibc
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// The vault's decrypted chunks (R-SEC-5): in the cache's pool, never in a core dump, locked as
/// far as RLIMIT_MEMLOCK allows, zeroed when evicted, removed, truncated away and at lock.
@Suite struct CacheMemoryTests {
    static let chunk = Format.payloadSize
    static func marker(_ count: Int) -> [UInt8] { [UInt8](repeating: 0xA5, count: count) }
    static func block(_ vault: Vault, _ id: UInt64, _ index: Int) -> PlaintextPool.Block? {
        vault.state.withLock { $0.chunks.cache.block(ChunkCache.Key(item: id, index: index)) }
    }
    static func pool(_ vault: Vault) -> PlaintextPool { vault.state.withLock { $0.chunks.cache.pool } }
    static func allZero(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy { $0 == 0 } }

    @Test func cachedChunksLiveInNoDumpMemoryLockedAsRoot() throws {
        let vault = try TestVaults.open(try TestVaults.storage())
        let id = try vault.makeFile("a", Self.marker(3 * Self.chunk))
        // From the end, as a sequential reader keeps only the chunks near it (`ChunkStore.dropRead`).
        for index in (0..<3).reversed() {
            #expect(try vault.read(id, offset: UInt64(index * Self.chunk), count: Self.chunk) == Self.marker(Self.chunk))
        }
        for index in 0..<3 {
            let block = try #require(Self.block(vault, id, index), "chunk \(index) is not cached")
            let flags = try vmFlags(containing: block.location)
            #expect(flags.contains("dd"), "chunk \(index) would be in a core dump: \(flags.sorted())")
            if isRoot { #expect(flags.contains("lo"), "chunk \(index) is not locked: \(flags.sorted())") }
        }
        try vault.lock()
    }

    @Test func anEvictedChunkIsZero() throws {
        // The cache holds two chunks: a third evicts the least recently used.
        let vault = try TestVaults.open(try TestVaults.storage(), cacheBytes: 0)
        let first = try vault.makeFile("first", Self.marker(Self.chunk))
        _ = try vault.readAll("first")  // a chunk written behind left the cache: loaded again
        let pool = Self.pool(vault)
        let block = try #require(Self.block(vault, first, 0))
        #expect(pool.currentBytes(of: block) == Self.marker(Self.chunk), "the hook does not see the chunk")
        try vault.makeFile("second", TestVaults.content(2 * Self.chunk))
        #expect(Self.block(vault, first, 0) == nil, "not evicted")
        #expect(Self.allZero(pool.currentBytes(of: block)), "an evicted chunk's memory keeps its plaintext")
        #expect(try vault.readAll("first") == Self.marker(Self.chunk), "the evicted chunk was written back")
        try vault.lock()
    }

    @Test func removedAndTruncatedChunksAreZero() throws {
        let vault = try TestVaults.open(try TestVaults.storage())
        let removed = try vault.makeFile("removed", Self.marker(Self.chunk))
        let cut = try vault.makeFile("cut", Self.marker(Self.chunk + 10_000))
        _ = (try vault.readAll("removed"), try vault.readAll("cut"))  // chunks written behind, loaded again
        let pool = Self.pool(vault)
        let removedBlock = try #require(Self.block(vault, removed, 0))
        let tailBlock = try #require(Self.block(vault, cut, 1))
        let headBlock = try #require(Self.block(vault, cut, 0))
        try vault.remove(Array("removed".utf8), from: Vault.rootID)
        try vault.truncate(cut, size: 100)
        #expect(Self.allZero(pool.currentBytes(of: removedBlock)), "a deleted file's chunk stays in memory")
        #expect(Self.allZero(pool.currentBytes(of: tailBlock)), "a chunk truncated away stays in memory")
        #expect(Array(pool.currentBytes(of: headBlock)[100...]).allSatisfy { $0 == 0 }, "the cut part of a chunk stays in memory")
        try vault.lock()
    }

    /// README, "Memory": writing does not fill the cache; a chunk leaves it once stored, and its
    /// block is zeroed and used again. A long write's chunks leave a group at a time and the next
    /// ones take their frames: none is given back to the system and taken again (an `mlock`
    /// faulting 256 KiB in under the vault's lock, on the writer's path: the 25 % of sequential
    /// write lost in round 2, docs/PERFORMANCE.md); the frames kept stay within what the write
    /// used at once.
    @Test func aLongWriteDoesNotFillTheCache() throws {
        let vault = try TestVaults.open(try TestVaults.storage(), cacheBytes: 64 << 20)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
        let bytes = TestVaults.content(96 * Self.chunk)
        for start in stride(from: 0, to: bytes.count, by: 1 << 20) {
            try vault.write(id, offset: UInt64(start), bytes: Array(bytes[start..<start + (1 << 20)]))
        }
        try vault.commit()
        let pool = Self.pool(vault)
        #expect(pool.inUseByteCount == 0, "\(pool.inUseByteCount / Self.chunk) chunks stayed")
        #expect(pool.reacquiredByteCount == 0, "\(pool.reacquiredByteCount / Self.chunk) frames given back and taken again")
        #expect(pool.mappedByteCount <= 24 * Self.chunk, "\(pool.mappedByteCount >> 20) MiB mapped for a 24 MiB write")
        #expect(try vault.readAll("big") == bytes)
        try vault.lock()
    }

    /// A small file opened takes a block of its own size from the pool, not one sized from its
    /// sealed bytes (nonce and tag past a power of two doubled the block of a 32 KiB file).
    @Test func aSmallFileTakesABlockOfItsOwnSize() throws {
        let storage = try TestVaults.storage()
        let sizes = [32 << 10, 4 << 10, 100_000]
        let writing = try TestVaults.open(storage)
        let ids = try sizes.map { try writing.makeFile("f\($0)", Self.marker($0)) }
        try writing.lock()
        let vault = try TestVaults.open(storage)  // nothing cached: each read loads its member
        for (id, size) in zip(ids, sizes) {
            #expect(try vault.read(id, offset: 0, count: size) == Self.marker(size))
            let block = try #require(Self.block(vault, id, 0), "the \(size)-byte file is not cached")
            #expect(block.size == PlaintextPool.blockSize(for: size), "a \(size)-byte file took a \(block.size)-byte block")
        }
        try vault.lock()
    }

    @Test func lockZeroesTheWholeCache() throws {
        let vault = try TestVaults.open(try TestVaults.storage())
        let id = try vault.makeFile("a", Self.marker(2 * Self.chunk + 5000))
        // Chunks written behind, loaded again; from the end, as a sequential reader keeps only
        // the chunks near it (`ChunkStore.dropRead`).
        for index in (0..<3).reversed() { _ = try vault.read(id, offset: UInt64(index * Self.chunk), count: Self.chunk) }
        let pool = Self.pool(vault)
        let blocks = try (0..<3).map { try #require(Self.block(vault, id, $0)) }
        try vault.lock()
        for block in blocks { #expect(Self.allZero(pool.currentBytes(of: block))) }
        #expect(pool.inUseByteCount == 0)
    }

    /// An unprivileged process with the default 8 MiB RLIMIT_MEMLOCK (a child made so when the
    /// tests run as root): keys stay locked, the cache locks what the limit leaves less the keys'
    /// headroom and says so, and everything it maps is out of core dumps.
    @Test func withTheDefaultMemoryLockLimitKeysAndPartOfTheCacheAreLocked() async {
        await #expect(processExitsWith: .success) {
            var limit = rlimit(rlim_cur: 8 << 20, rlim_max: 8 << 20)
            if getuid() == 0 {
                guard setrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0,
                      setgid(65534) == 0, setuid(65534) == 0 else { exit(10) }
            }
            // setuid changes this thread only (here): the vault is used from this thread.
            guard let remaining = MemoryLockLimit.remaining() else { exit(11) }
            guard remaining <= 8 << 20 else { exit(17) }
            let vault = try TestVaults.open(try TestVaults.storage(), cacheBytes: 32 << 20)
            let (lockable, cacheLimit) = vault.cacheLocking
            guard cacheLimit == 32 << 20, lockable < cacheLimit, lockable > 4 << 20,
                  lockable <= remaining - ChunkCache.keyHeadroom else { exit(12) }
            // Just under a chunk: each stays in the cache, dirty, until a commit (a whole chunk
            // written behind leaves the cache once stored).
            for n in 0..<40 { try vault.makeFile("f\(n)", TestVaults.content(Self.chunk - 1, seed: UInt64(n))) }
            let pool = Self.pool(vault)
            guard pool.mappedByteCount >= 40 * Self.chunk, pool.lockedByteCount <= lockable,
                  pool.lockedByteCount >= lockable - PlaintextPool.regionSize else { exit(13) }
            // Keys made after the cache took its share are still locked.
            for n in 0..<3000 { try vault.makeFile("small\(n)", [1]) }
            guard vault.keysAreLocked else { exit(14) }
            var locked = 0, unlocked = 0
            try pool.withRegionAddresses { regions in
                for region in regions {
                    let flags = try vmFlags(containing: region)
                    guard flags.contains("dd") else { exit(15) }
                    if flags.contains("lo") { locked += 1 } else { unlocked += 1 }
                }
            }
            guard locked > 0, unlocked > 0 else { exit(16) }
            try vault.lock()
            exit(0)
        }
    }
}
