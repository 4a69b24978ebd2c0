import Testing
import DotSafeTestSupport
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §3.3 (issue 17): a new group appears whole. Chunks written behind go straight
/// into the files of the group being assembled, never over a random pre-fill; a crash at any
/// point leaves every file complete, and the next open a count of files that is a multiple of
/// 16 and the vault as committed.
@Suite struct GroupAssemblyTests {
    static let chunk = Format.payloadSize
    static let bytes = TestVaults.content(40 * chunk + 5)

    /// Writes `bytes` into a new file "big" in pieces of 1 MiB.
    static func writeBig(_ vault: Vault) throws {
        let id = try vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
        for start in stride(from: 0, to: bytes.count, by: 1 << 20) {
            try vault.write(id, offset: UInt64(start), bytes: Array(bytes[start..<min(start + (1 << 20), bytes.count)]))
        }
    }

    /// Each chunk is written once: into a free file, or as its own file of a new group.
    @Test func chunksWrittenBehindAreWrittenOnce() throws {
        let storage = CountingStorageFolder(try TestVaults.storage())
        let vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        try vault.makeFile("small", [1, 2, 3])
        try vault.commit()
        storage.reset()
        try Self.writeBig(vault)
        try vault.commit()
        let counts = storage.current
        #expect(counts.creates == 48, "41 chunks less the free files of group 0: three new groups")
        // Before, each chunk of a new group overwrote the random file made for it (about 40
        // writes); now only chunks that took a free file of group 0, the page and the root are.
        #expect(counts.writes < 16, "\(counts.writes) files written over")
        try vault.lock()
        #expect(try TestVaults.open(storage.base).readAll("big") == Self.bytes)
        try checkStorageInvariants(storage.base as! SimulatedStorageFolder)
    }

    /// On disk each sealed chunk waits as an unnamed file, not as bytes in memory: the folder
    /// shows whole groups only, every one of the group's files is the vault's, and the file
    /// reads back after the vault is opened again.
    @Test func onDiskChunksWaitForTheirGroupAsUnnamedFiles() throws {
        let path = try TestFolder.make("assembly")
        defer { TestFolder.remove(path) }
        let disk = try DiskStorageFolder(path: path, unnamedAhead: 0)  // its count is of chunks waiting
        _ = try Storage.addCovers(to: disk, random: SystemRandom())
        let storage = CountingStorageFolder(disk)
        let vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
        try vault.makeFile("small", [1, 2, 3])
        try vault.commit()
        let id = try vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
        var waiting = 0
        for start in stride(from: 0, to: Self.bytes.count, by: 1 << 20) {
            try vault.write(id, offset: UInt64(start), bytes: Array(Self.bytes[start..<min(start + (1 << 20), Self.bytes.count)]))
            #expect(try disk.listAllNames().count % Format.groupSize == 0, "a group shows in part")
            waiting = max(waiting, try unnamedFilesOpen(in: path))
        }
        #expect(waiting > 0, "no chunk waited as an unnamed file")
        try vault.commit()
        #expect(try unnamedFilesOpen(in: path) == 0)
        #expect(storage.current.creates >= 48)
        try vault.lock()
        #expect(try TestVaults.open(disk).readAll("big") == Self.bytes)
        #expect(try disk.listAllNames().count % Format.groupSize == 0)
    }

    /// A crash at every mutation of a long write and its commit, as a process death and as a
    /// power loss: every file is complete at every instant; some crashes fall between the files
    /// of a group (the count is then off a multiple of 16), and the next open removes them.
    @Test(arguments: [false, true])
    func aCrashMidGroupLeavesWholeFilesAndWholeGroups(powerLoss: Bool) throws {
        var mutations = 0, midGroup = 0
        while true {
            let storage = try TestVaults.storage()
            let vault = try TestVaults.open(storage, cacheBytes: 64 << 20)
            try vault.makeFile("kept", [7, 7, 7])
            try vault.commit()
            let committedCount = storage.snapshot.count
            storage.crash(afterMutations: mutations)
            var completed = false
            do {
                try Self.writeBig(vault)
                try vault.commit()
                completed = true
            } catch VaultError.store(.simulatedCrash) {}
            let context = "crash after \(mutations) mutations\(powerLoss ? ", power loss" : "")"
            for (name, file) in storage.snapshot {
                #expect(file.count == Format.fileSize, "\(context): \(name) has \(file.count) bytes")
            }
            let count = storage.snapshot.count
            #expect(count >= committedCount, "\(context): a committed file went")
            if count % Format.groupSize != 0 { midGroup += 1 }
            if powerLoss { storage.powerLoss() } else { storage.processCrash() }
            let reopened = try TestVaults.open(storage)
            #expect(try reopened.readAll("kept") == [7, 7, 7], "\(context)")
            if completed { #expect(try reopened.readAll("big") == Self.bytes, "\(context)") }
            try reopened.lock()
            try checkStorageInvariants(storage)
            if completed { break }
            mutations += 1
            try #require(mutations < 2000, "the write never completed")
        }
        #expect(midGroup > 0, "no crash fell within a group's files")
    }
}
