import Testing
import VaultCore
import VaultFormat
import VaultStore

/// What each operation does to blocks, counted (CryFS's e2e perf tests are the model): these
/// catch performance regressions that timings on a noisy machine never show.
@Suite struct IOCountTests {
    /// A vault over a counting storage; `reopen` gives a cold one (empty chunk cache).
    struct Fixture {
        let base: SimulatedStorageFolder
        let storage: CountingStorageFolder
        var vault: Vault

        init() throws {
            base = try TestVaults.storage()
            storage = CountingStorageFolder(base)
            vault = try TestVaults.open(storage)
        }

        mutating func reopen() throws {
            try vault.lock()
            vault = try TestVaults.open(storage)
            storage.reset()
        }

        /// Runs `body`, returning how much it changed the vault's statistics.
        func delta(_ body: () throws -> Void) rethrows -> VaultStatistics {
            let before = vault.statistics
            try body()
            let after = vault.statistics
            var d = VaultStatistics()
            d.chunkDecrypts = after.chunkDecrypts - before.chunkDecrypts
            d.chunkEncrypts = after.chunkEncrypts - before.chunkEncrypts
            d.memberDecrypts = after.memberDecrypts - before.memberDecrypts
            d.memberEncrypts = after.memberEncrypts - before.memberEncrypts
            d.pageWrites = after.pageWrites - before.pageWrites
            d.commits = after.commits - before.commits
            d.coverRefreshes = after.coverRefreshes - before.coverRefreshes
            return d
        }
    }

    static let gibibyte: UInt64 = 1 << 30
    static let payload = UInt64(Format.payloadSize)

    @Test func smallReadAtTheEndOfABigFileDecryptsOneChunk() throws {
        var fixture = try Fixture()
        let id = try fixture.vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
        // Sparse: only the last chunk of 1 GiB is written.
        try fixture.vault.write(id, offset: Self.gibibyte - Self.payload, bytes: TestVaults.content(Format.payloadSize))
        try fixture.reopen()

        var bytes: [UInt8] = []
        let d = try fixture.delta { bytes = try fixture.vault.read(id, offset: Self.gibibyte - 4096, count: 4096) }
        #expect(bytes == Array(TestVaults.content(Format.payloadSize)[(Format.payloadSize - 4096)...]))
        #expect(d.chunkDecrypts == 1)
        #expect(d.memberDecrypts == 0)
        #expect(fixture.storage.current.reads + fixture.storage.current.partialReads == 1)

        // The same bytes again come from the cache; a hole reads as zeros without a decrypt.
        let again = try fixture.delta {
            _ = try fixture.vault.read(id, offset: Self.gibibyte - 4096, count: 4096)
            #expect(try fixture.vault.read(id, offset: 4096, count: 4096) == [UInt8](repeating: 0, count: 4096))
        }
        #expect(again.chunkDecrypts == 0)
        #expect(fixture.storage.current.reads + fixture.storage.current.partialReads == 1)
    }

    /// The benchmark's read-all (`find -exec cat` of many small files), cold: per file one
    /// member decrypt and one storage read of exactly its sealed bytes, nothing written.
    @Test func readingEverySmallFileReadsEachMemberOnce() throws {
        var fixture = try Fixture()
        let folder = try fixture.vault.create(.folder, in: Vault.rootID, named: Array("tree".utf8), mode: 0o755)
        let sizes = (0..<200).map { 100 + 97 * $0 }   // 100 B to 19 KiB: many members per pack
        var ids: [UInt64] = []
        for (i, size) in sizes.enumerated() {
            ids.append(try fixture.vault.makeFile("f\(i)", TestVaults.content(size, seed: UInt64(i)), in: folder))
        }
        try fixture.reopen()

        var contents: [[UInt8]] = []
        let d = try fixture.delta {
            for (i, id) in ids.enumerated() {
                // As the kernel asks: a 128 KiB request, then one at the end.
                contents.append(try fixture.vault.read(id, offset: 0, count: 128 << 10))
                contents.append(try fixture.vault.read(id, offset: UInt64(sizes[i]), count: 128 << 10))
            }
        }
        for (i, size) in sizes.enumerated() {
            #expect(contents[2 * i] == TestVaults.content(size, seed: UInt64(i)))
            #expect(contents[2 * i + 1].isEmpty)
        }
        #expect(d.memberDecrypts == sizes.count)
        #expect(d.chunkDecrypts == 0)
        let counts = fixture.storage.current
        #expect(counts.partialReads == sizes.count)
        #expect(counts.reads == 0)
        // Format 2: each member is N || ciphertext || tag (docs/FORMAT.md §13.8), 24 bytes more.
        #expect(counts.bytesRead == sizes.reduce(0) { $0 + $1 + Format.sealNonceSize + Format.tagSize })
        #expect(counts.writes + counts.creates + counts.removes + counts.syncs == 0)
    }

    @Test func attributesAndListingsTouchNoBlock() throws {
        var fixture = try Fixture()
        let folder = try fixture.vault.create(.folder, in: Vault.rootID, named: Array("d".utf8), mode: 0o755)
        for i in 0..<50 { try fixture.vault.makeFile("f\(i)", TestVaults.content(100 + i), in: folder) }
        try fixture.vault.makeFile("big", TestVaults.content(3 * Format.payloadSize))
        try fixture.reopen()

        let d = try fixture.delta {
            let entries = try fixture.vault.contents(ofFolder: folder)
            #expect(entries.count == 50)
            for entry in entries { _ = try fixture.vault.attributes(entry.id) }
            _ = try fixture.vault.contents(ofFolder: Vault.rootID)
            _ = try fixture.vault.attributes(try fixture.vault.lookup(Vault.rootID, Array("big".utf8)))
        }
        #expect(d == VaultStatistics())
        #expect(fixture.storage.current == CountingStorageFolder.Counts())
    }

    /// The benchmark's sequential write (`dd bs=1M conv=fsync`), 64 MiB in 1 MiB pieces, then
    /// the fsync's commit: each chunk sealed and stored once, in files of groups assembled from
    /// them (no random file written first and overwritten), one sync of the data before the root
    /// and one after it, no file read, no compaction, no cover refresh (docs/PERFORMANCE.md).
    @Test func aSequentialWriteStoresEachChunkOnce() throws {
        var fixture = try Fixture()
        try fixture.vault.makeFile("first", [1])
        try fixture.vault.commit()
        fixture.storage.reset()
        let chunks = 256
        let d = try fixture.delta {
            let id = try fixture.vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
            for piece in 0..<chunks / 4 {
                try fixture.vault.write(id, offset: UInt64(piece) << 20, bytes: TestVaults.content(1 << 20, seed: UInt64(piece)))
            }
            try fixture.vault.commit()
        }
        let counts = fixture.storage.current
        #expect(d.chunkEncrypts == chunks && d.commits == 1 && d.coverRefreshes == 0)
        #expect(counts.bytesRead == 0, "\(counts.bytesRead) bytes read")
        // Chunk files, the random files of the last group that no chunk took (the commit makes
        // it whole), pages, the root: nothing written twice.
        #expect(counts.creates + counts.writes <= chunks + Format.groupSize + 8, "\(counts.creates) creates, \(counts.writes) writes")
        #expect(counts.groups <= chunks / Format.groupSize + 1, "\(counts.groups) groups")
        #expect(counts.syncs <= 2 && counts.folderSyncs <= 2, "\(counts.syncs) syncs, \(counts.folderSyncs) folder syncs")
        #expect(counts.removes == 0)
    }

    @Test func smallWritesReencryptTheMemberOnceAtCommit() throws {
        var fixture = try Fixture()
        let id = try fixture.vault.makeFile("small", TestVaults.content(1000))
        try fixture.vault.commit()
        fixture.storage.reset()

        let writes = try fixture.delta {
            for i in 0..<10 { try fixture.vault.write(id, offset: UInt64(i * 100), bytes: TestVaults.content(100, seed: UInt64(i))) }
        }
        #expect(writes.memberEncrypts == 0)
        #expect(writes.chunkEncrypts == 0)
        #expect(fixture.storage.current.writes + fixture.storage.current.creates == 0)

        let commit = try fixture.delta { try fixture.vault.commit() }
        #expect(commit.memberEncrypts == 1)
        #expect(commit.chunkEncrypts == 0)
        #expect(commit.commits == 1)
    }

    @Test func thousandCreatesMakeOneCommitWithFewPages() throws {
        var fixture = try Fixture()
        try fixture.vault.makeFile("first", [1])
        try fixture.vault.commit()
        fixture.storage.reset()

        let d = try fixture.delta {
            for i in 0..<1000 { try fixture.vault.create(.file, in: Vault.rootID, named: Array("file-\(i)".utf8), mode: 0o644) }
            try fixture.vault.commit()
        }
        #expect(d.commits == 1)
        // 1,000 records of about 100 bytes fit in one or two 256 KiB pages, plus the root's page.
        #expect(d.pageWrites <= 4)
        #expect(d.chunkEncrypts == 0)
        // Page files and the root: a handful of storage writes, not one per create.
        #expect(fixture.storage.current.writes + fixture.storage.current.creates <= 24)
    }

    @Test func truncateToOneTebibyteWritesNoChunk() throws {
        var fixture = try Fixture()
        let id = try fixture.vault.makeFile("sparse", TestVaults.content(10))
        try fixture.vault.commit()
        fixture.storage.reset()

        let d = try fixture.delta {
            try fixture.vault.truncate(id, size: 1 << 40)
            try fixture.vault.commit()
        }
        #expect(try fixture.vault.attributes(id).size == 1 << 40)
        #expect(d.chunkEncrypts <= 1)   // at most the first chunk, which held the 10 bytes
        #expect(d.pageWrites <= 3)
        #expect(fixture.storage.current.writes + fixture.storage.current.creates <= 8)
        #expect(try fixture.vault.read(id, offset: (1 << 40) - 4096, count: 4096) == [UInt8](repeating: 0, count: 4096))
    }

    @Test func oneByteChangeInABigVaultWritesFewPages() throws {
        var fixture = try Fixture()
        let folder = try fixture.vault.create(.folder, in: Vault.rootID, named: Array("tree".utf8), mode: 0o755)
        // Enough records for many index pages: long names and extended attributes make each
        // record about 1 KiB.
        let longName = String(repeating: "n", count: 200)
        for i in 0..<2000 {
            let id = try fixture.vault.makeFile("\(longName)-\(i)", TestVaults.content(200, seed: UInt64(i)), in: folder)
            try fixture.vault.setExtendedAttribute(id, Array("user.pad".utf8), TestVaults.content(700, seed: UInt64(i)))
        }
        let big = try fixture.vault.makeFile("big", TestVaults.content(8 * Format.payloadSize))
        let all = try fixture.delta { try fixture.vault.commit() }
        #expect(all.pageWrites >= 6, "the vault should span several index pages (\(all.pageWrites))")
        fixture.storage.reset()

        let small = try fixture.delta {
            try fixture.vault.write(big, offset: 12345, bytes: [42])
            try fixture.vault.commit()
        }
        #expect(small.commits == 1)
        #expect(small.chunkEncrypts == 1)
        #expect(small.pageWrites <= 2, "pages written for a one-byte change: \(small.pageWrites) of \(all.pageWrites)")
        let counts = fixture.storage.current
        // A new group, when no free file was left for the chunk, is made whole (§3.3): its
        // files are not this change's writes.
        #expect(counts.writes + counts.creates - counts.groups * Format.groupSize <= 8, "\(counts)")
    }

    /// Opening reads the unlock record, both slots and each index page once, and no content:
    /// every page is decoded at open, since a folder's names are found only in its items' own
    /// records (docs/PERFORMANCE.md, "Memory after mount"). A count for an index read on demand
    /// to bring down.
    @Test func openingReadsEachIndexPageOnce() throws {
        var fixture = try Fixture()
        let padding = TestVaults.content(700)
        for i in 0..<600 {
            let id = try fixture.vault.makeFile(String(repeating: "n", count: 200) + "-\(i)", TestVaults.content(100, seed: UInt64(i)))
            try fixture.vault.setExtendedAttribute(id, Array("user.pad".utf8), padding)
        }
        let pages = try fixture.delta { try fixture.vault.commit() }.pageWrites
        #expect(pages >= 3, "the vault should span several index pages (\(pages))")
        try fixture.vault.lock()
        fixture.storage.reset()
        fixture.vault = try TestVaults.open(fixture.storage)
        let counts = fixture.storage.current
        #expect(counts.reads == 3 + pages, "the unlock record, two slots and \(pages) pages: \(counts.reads) reads")
        #expect(counts.partialReads == 0 && counts.writes + counts.creates + counts.removes == 0)
        #expect(try fixture.vault.lookup(Vault.rootID, Array((String(repeating: "n", count: 200) + "-599").utf8)) > 0)
    }
}
