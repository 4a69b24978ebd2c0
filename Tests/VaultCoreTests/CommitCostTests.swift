import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// R-VLT-3: a commit writes in proportion to what changed, counted in files.
@Suite struct CommitCostTests {
    /// A vault with a few small files (one pack, far from full) and a chunked one; returns the
    /// names of its covers, found as the files that a lock right after a commit rewrites.
    static func vault(_ storage: SimulatedStorageFolder) throws -> Set<String> {
        let vault = try TestVaults.open(storage)
        // No refill (§9.2 step 6): the lock then rewrites the covers and nothing else.
        vault.state.withLock { $0.writer.refillsFreedFiles = false }
        for i in 0..<5 { try vault.makeFile("small-\(i)", TestVaults.content(300 + i, seed: UInt64(i))) }
        try vault.makeFile("big", streamContent(Format.payloadSize + 1, seed: 1))
        try vault.commit()
        try vault.setAttributes(Vault.rootID, mtime: 5)
        try vault.commit()
        let before = storage.snapshot
        try vault.lock()
        let covers = SnapshotDiff(before, storage.snapshot).written
        #expect((2...6).contains(covers.count))
        return covers
    }

    @Test func renameWritesOnePageAndTheRoot() throws {
        let storage = try TestVaults.storage()
        let covers = try Self.vault(storage)
        let numbers = try FileNumbers(storage)
        let before = storage.snapshot
        let vault = try TestVaults.open(storage)
        // Counted writes: no refill (format 2 refills the page a commit replaces at that commit).
        vault.state.withLock { $0.writer.refillsFreedFiles = false }
        try vault.rename(Array("small-1".utf8), in: Vault.rootID, to: Array("renamed".utf8), in: Vault.rootID)
        try vault.commit()
        let diff = SnapshotDiff(before, storage.snapshot)
        #expect(diff.added.isEmpty && diff.removed.isEmpty)
        let data = numbers.dataFiles(diff.changed.subtracting(covers))
        #expect(data.count == 1, "one index page; the pack and the chunk stay as they are")
        // Format 2: the root into its slot, then its copy into the other (docs/FORMAT.md §13.5).
        #expect(diff.changed.filter(numbers.isSlot).count == 2)
        #expect(vault.statistics.memberEncrypts == 0 && vault.statistics.chunkEncrypts == 0)
        try vault.lock()
        try checkStorageInvariants(storage)
    }

    /// Deleting most members of a pack moves the rest into the open pack (the space comes back);
    /// the moved members still read.
    @Test func packsLosingMembersAreCompacted() throws {
        let storage = try TestVaults.storage()
        _ = try Self.vault(storage)
        let vault = try TestVaults.open(storage)
        for i in 0..<4 { try vault.remove(Array("small-\(i)".utf8), from: Vault.rootID) }
        try vault.makeFile("new", [1, 2, 3])
        try vault.lock()
        let again = try TestVaults.open(storage)
        expectSame(try again.readAll("small-4"), TestVaults.content(304, seed: 4), "moved member")
        #expect(try again.readAll("new") == [1, 2, 3])
        #expect(try again.tree().count == 3)
        try checkStorageInvariants(storage)
    }
}
