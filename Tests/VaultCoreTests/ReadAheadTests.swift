import Dispatch
import Glibc
import Synchronization
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// Chunks are decrypted outside the vault's lock, and a sequential reader's next chunks ahead
/// of it, in the background. Each chunk is still decrypted once, a random reader gets no
/// read-ahead, and a damaged chunk fails its own reads only.
@Suite struct ReadAheadTests {
    static let chunk = Format.payloadSize
    static let piece = 128 << 10  // what the kernel's readahead asks for

    @Test func aSequentialReadDecryptsEachChunkOnceAndLoadsAhead() throws {
        let (vault, id, bytes) = try Self.coldVaultWithAFile(chunks: 12)
        #expect(try vault.read(id, offset: 0, count: Self.piece) == Array(bytes[0..<Self.piece]))
        #expect(vault.statistics.chunkDecrypts == 1)
        _ = try vault.read(id, offset: UInt64(Self.piece), count: Self.piece)
        #expect(vault.statistics.chunkDecrypts == 1 + ChunkStore.readAhead, "chunks 1 to \(ChunkStore.readAhead) are loaded ahead")
        for start in stride(from: 2 * Self.piece, to: bytes.count, by: Self.piece) {
            #expect(try vault.read(id, offset: UInt64(start), count: Self.piece) == Array(bytes[start..<start + Self.piece]))
        }
        #expect(vault.statistics.chunkDecrypts == 12, "each chunk once: readers wait for a load ahead")
        try vault.lock()
    }

    /// A sequential reader keeps the chunks just behind it, not the whole file (the cache
    /// streams, `ChunkStore.dropRead`); a chunk with unsaved changes stays, and reads as written.
    @Test func aSequentialReadLeavesOnlyTheChunksNearItCached() throws {
        let (vault, id, bytes) = try Self.coldVaultWithAFile(chunks: 12)
        var expected = bytes
        let changed = TestVaults.content(1000, seed: 9), at = 3 * Self.chunk + 10
        try vault.write(id, offset: UInt64(at), bytes: changed)
        expected.replaceSubrange(at..<at + changed.count, with: changed)
        for start in stride(from: 0, to: bytes.count, by: Self.piece) {
            #expect(try vault.read(id, offset: UInt64(start), count: Self.piece) == Array(expected[start..<start + Self.piece]))
        }
        #expect(Self.cachedChunks(vault, id, of: 12) == [3, 10, 11], "the changed chunk and the last two")
        #expect(vault.statistics.chunkDecrypts == 12, "each chunk once, the changed one by its write")
        try vault.lock()
    }

    /// The kernel may ask for a whole chunk at a time (`cat`, and fio's 1 MiB reads, came as one
    /// 256 KiB request per chunk): the first read loads its own chunk only (it may be all there
    /// is), the second its own and the next ones ahead, later reads find theirs loaded or
    /// loading, and the chunks behind still leave the cache.
    @Test func aReaderOfWholeChunksLoadsAheadAndLeavesOnlyTheChunksNearItCached() throws {
        let (vault, id, bytes) = try Self.coldVaultWithAFile(chunks: 12)
        #expect(try vault.read(id, offset: 0, count: Self.chunk) == Array(bytes[0..<Self.chunk]))
        #expect(vault.statistics.chunkDecrypts == 1, "nothing ahead of a first read")
        #expect(try vault.read(id, offset: UInt64(Self.chunk), count: Self.chunk) == Array(bytes[Self.chunk..<2 * Self.chunk]))
        #expect(vault.statistics.chunkDecrypts == 2 + ChunkStore.readAhead, "chunks 2 to \(1 + ChunkStore.readAhead) are loaded ahead")
        for start in stride(from: 2 * Self.chunk, to: bytes.count, by: Self.chunk) {
            #expect(try vault.read(id, offset: UInt64(start), count: Self.chunk) == Array(bytes[start..<start + Self.chunk]))
        }
        #expect(vault.statistics.chunkDecrypts == 12, "each chunk once")
        #expect(Self.cachedChunks(vault, id, of: 12) == [10, 11], "the last two")
        try vault.lock()
    }

    /// What a file's reads left to tell a stream goes with its last handle: a session that
    /// reads many files keeps nothing of the closed ones.
    @Test func aFilesReadHistoryGoesWithItsLastHandle() throws {
        let (vault, id, bytes) = try Self.coldVaultWithAFile(chunks: 2)
        let files = { vault.state.withLock { $0.chunks.filesWithReads } }
        vault.hold(id)
        vault.hold(id)
        #expect(try vault.read(id, offset: 0, count: 4096) == Array(bytes[0..<4096]))
        #expect(files() == 1)
        vault.release(id)
        #expect(files() == 1, "a handle is still open")
        vault.release(id)
        #expect(files() == 0)
        try vault.lock()
    }

    static func cachedChunks(_ vault: Vault, _ id: UInt64, of count: Int) -> [Int] {
        vault.state.withLock { state in (0..<count).filter { state.chunks.contains(ChunkCache.Key(item: id, index: $0)) } }
    }

    @Test func randomReadsLoadNothingAhead() throws {
        let (vault, id, bytes) = try Self.coldVaultWithAFile(chunks: 8)
        for index in [5, 2, 7, 1, 2] {
            let start = index * Self.chunk + 5000
            #expect(try vault.read(id, offset: UInt64(start), count: 4096) == Array(bytes[start..<start + 4096]))
        }
        #expect(vault.statistics.chunkDecrypts == 4)
        try vault.lock()
    }

    /// A sequential reader's chunks are read as a stream (past the kernel's page cache, where
    /// the kernel then holds them as plaintext); a read at random keeps the page cache's copy.
    @Test func onlyASequentialReadersChunksAreStreamed() throws {
        let storage = CountingStorageFolder(try TestVaults.storage())
        let bytes = TestVaults.content(6 * Self.chunk)
        let writer = try TestVaults.open(storage)
        let id = try writer.makeFile("f", bytes)
        try writer.lock()
        let vault = try TestVaults.open(storage)
        storage.reset()
        for index in [4, 1] {
            let start = index * Self.chunk + 5000
            #expect(try vault.read(id, offset: UInt64(start), count: 4096) == Array(bytes[start..<start + 4096]))
        }
        #expect(storage.current.reads == 2 && storage.current.streamedReads == 0)
        storage.reset()
        for start in stride(from: 0, to: bytes.count, by: Self.piece) {
            #expect(try vault.read(id, offset: UInt64(start), count: Self.piece) == Array(bytes[start..<start + Self.piece]))
        }
        #expect(storage.current.reads == 4 && storage.current.streamedReads == 4, "chunks 0, 2, 3 and 5: 1 and 4 were cached")
        try vault.lock()
    }

    /// A lock, or a failed sync's discard, returns only once the loads ahead it met are done:
    /// none reads the storage or holds a copy of a chunk key after it, nor keeps the vault, and
    /// so its storage folder's descriptor, alive (a test that checked for open descriptors right
    /// after a lock saw one).
    @Test(arguments: [false, true]) func aLockWaitsForTheLoadsAhead(discarding: Bool) throws {
        let storage = GatedStorageFolder(try TestVaults.storage())
        let writer = try TestVaults.open(storage)
        let id = try writer.makeFile("f", TestVaults.content(12 * Self.chunk, seed: 4))
        try writer.lock()
        var vault: Vault? = try TestVaults.open(storage)
        _ = try vault!.read(id, offset: 0, count: Self.piece)
        storage.closeReads()  // this thread's reads pass; the loads ahead wait at the gate
        _ = try vault!.read(id, offset: UInt64(Self.piece), count: Self.piece)
        let locked = DispatchSemaphore(value: 0)
        weak var gone = vault
        DispatchQueue.global().async { [weak vault] in
            if discarding { vault?.discard() } else { try? vault?.lock() }
            locked.signal()
        }
        let early = locked.wait(timeout: .now() + 0.5) == .success
        #expect(!early, "the lock returned with loads ahead still waiting")
        storage.openReads()
        if !early { locked.wait() }
        vault = nil
        #expect(gone == nil, "a load ahead still holds the vault after its lock")
    }

    @Test func aLoadWhoseFileIsTakenMeanwhileReadsAgain() throws {
        let storage = GatedStorageFolder(try TestVaults.storage())
        let writer = try TestVaults.open(storage)
        let id = try writer.makeFile("f", TestVaults.content(2 * Self.chunk, seed: 1))
        try writer.lock()
        let vault = try TestVaults.open(storage)
        storage.closeReads()
        let result = Mutex<Result<[UInt8], any Error>?>(nil)
        let done = DispatchGroup()
        done.enter()
        DispatchQueue.global().async {
            let read = Result { try vault.read(id, offset: 5000, count: 100) }
            result.withLock { $0 = read }
            done.leave()
        }
        while vault.statistics.chunkDecrypts == 0 { usleep(1000) }  // the load has begun, held at the gate
        // Chunk 0 moves to another file; after the commit its old file is free, and new chunks take it.
        let second = TestVaults.content(Self.chunk, seed: 2)
        try vault.write(id, offset: 0, bytes: second)
        try vault.commit()
        try vault.makeFile("g", TestVaults.content(16 * Self.chunk, seed: 3))
        try vault.commit()
        storage.openReads()
        done.wait()
        #expect(try result.withLock { try $0!.get() } == Array(second[5000..<5100]))
        try vault.lock()
    }

    /// A vault holding one file of `chunks` whole chunks, opened again: nothing is cached.
    static func coldVaultWithAFile(chunks: Int) throws -> (Vault, UInt64, [UInt8]) {
        let storage = try TestVaults.storage()
        let bytes = TestVaults.content(chunks * Self.chunk)
        let writer = try TestVaults.open(storage)
        try writer.makeFile("f", bytes)
        try writer.lock()
        let vault = try TestVaults.open(storage)
        return (vault, try vault.lookup(Vault.rootID, Array("f".utf8)), bytes)
    }

    @Test func aDamagedChunkFailsOnlyItsOwnReads() throws {
        let storage = GatedStorageFolder(try TestVaults.storage())
        let bytes = TestVaults.content(6 * Self.chunk)
        let writer = try TestVaults.open(storage)
        let id = try writer.create(.file, in: Vault.rootID, named: Array("f".utf8), mode: 0o644)
        for index in 0..<6 {
            try writer.write(id, offset: UInt64(index * Self.chunk), bytes: Array(bytes[index * Self.chunk..<(index + 1) * Self.chunk]))
            try writer.commit()
        }
        // Chunk 3's file, as the index references it (a chunk written behind may go into a group
        // being assembled, whose files appear later and all at once).
        let suspects: Set<String> = [try writer.state.withLock { try $0.writer.name($0.tree.items[id]!.chunks[3]!.fileNumber) }]
        try writer.lock()
        for name in suspects {
            var damaged = try #require(storage.simulated.snapshot[name])
            damaged[Format.fileSize / 2] ^= 1
            storage.simulated.tamper(name, with: damaged)
        }

        let vault = try TestVaults.open(storage)
        for start in stride(from: 0, to: bytes.count, by: Self.piece) {
            let read = { try vault.read(id, offset: UInt64(start), count: Self.piece) }
            if start / Self.chunk == 3 {
                #expect(throws: VaultError.damagedData("item \(id), chunk 3")) { try read() }
            } else {
                #expect(try read() == Array(bytes[start..<start + Self.piece]), "at \(start)")
            }
        }
        #expect(throws: VaultError.damagedData("item \(id), chunk 3")) { try vault.read(id, offset: UInt64(3 * Self.chunk), count: 10) }
        try vault.lock()
    }
}
