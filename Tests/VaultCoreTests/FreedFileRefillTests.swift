import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §9.2 step 6 (issue 11, item 3): a file the index stopped referencing gets
/// random bytes at the next commit, or at lock, once neither slot's root references it; a
/// session that changes nothing writes nothing. This is format 1's refill, on format-1 vaults (the
/// other slot keeps the older root); format 2 refills at the commit that frees, since both slots
/// then hold the new root (`FormatTwoVaultTests.aCommitRefillsWhatItFreed`).
@Suite struct FreedFileRefillTests {
    static let payload = Format.payloadSize

    /// The chunk files of a 5-chunk file: the files its index entry references, each written by
    /// its commit. Not every file that commit added: a new group's files that no chunk took hold
    /// random bytes (§3.3) and were never freed, so no refill is due for them (§9.2 step 6).
    static func chunkFiles(_ vault: Vault, _ storage: SimulatedStorageFolder) throws -> [String: [UInt8]] {
        let before = storage.snapshot
        let id = try vault.makeFile("big", TestVaults.content(5 * payload, seed: 3))
        try vault.commit()
        let after = storage.snapshot
        let chunks = try vault.state.withLock { state in
            try state.tree.items[id]!.chunks.values.map { try state.writer.name($0.fileNumber) }
        }
        #expect(chunks.count == 5)
        #expect(chunks.allSatisfy { after[$0]?.count == Format.fileSize && before[$0] != after[$0] }, "written by the commit")
        return Dictionary(uniqueKeysWithValues: chunks.map { ($0, after[$0]!) })
    }

    @Test func freedFilesAreRefilledOneCommitLater() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, format: .one)
        try vault.makeFile("kept", TestVaults.content(700, seed: 1))
        try vault.commit()
        let written = try Self.chunkFiles(vault, storage)

        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.commit()
        // The other slot's root still lists them: they keep their bytes for one commit.
        let unchanged = written.filter { storage.snapshot[$0.key] == $0.value }
        #expect(unchanged.count >= 5, "\(unchanged.count) chunk files kept until the next commit")
        let refilledBefore = vault.statistics.refilledFiles

        try vault.setAttributes(Vault.rootID, mtime: 7)
        try vault.commit()
        let stillOld = written.filter { storage.snapshot[$0.key] == $0.value }
        #expect(stillOld.isEmpty, "\(stillOld.count) freed files keep their old bytes after two commits")
        #expect(vault.statistics.refilledFiles - refilledBefore >= 5)
        // Once each: the next commit refills nothing more.
        let count = vault.statistics.refilledFiles
        try vault.setAttributes(Vault.rootID, mtime: 8)
        try vault.commit()
        #expect(vault.statistics.refilledFiles == count)
        try vault.lock()

        let again = try TestVaults.open(storage, format: .one)
        expectSame(try again.readAll("kept"), TestVaults.content(700, seed: 1), "kept file")
        try again.lock()
        try checkStorageInvariants(storage)
    }

    /// Chunks written behind into a group assembled in memory (§3.3) are refilled as any freed
    /// file: one commit later in format 1, at the commit that frees them in format 2 (or removed
    /// with their released group). 24 chunks: at most 6 fit the free files of group 0, so at
    /// least one new group is made from the chunks, whatever the number of covers.
    @Test(arguments: [StorageFormat.one, .two]) func chunksOfAnAssembledGroupAreRefilled(format: StorageFormat) throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, format: format)
        let id = try vault.makeFile("big", TestVaults.content(24 * Self.payload, seed: 4))
        try vault.commit()
        let numbers = vault.state.withLock { $0.tree.items[id]!.chunks.values.map(\.fileNumber) }
        #expect(numbers.count == 24)
        #expect(numbers.filter { $0 >= UInt64(Format.groupSize) }.count >= 16, "the chunks filled a new group")
        let names = try vault.state.withLock { state in try numbers.map { try state.writer.name($0) } }
        let old = names.map { storage.snapshot[$0] }
        #expect(old.allSatisfy { $0 != nil })

        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.commit()
        if format == .one {
            try vault.setAttributes(Vault.rootID, mtime: 7)
            try vault.commit()
        }
        let stillOld = zip(names, old).filter { storage.snapshot[$0.0] == $0.1 }
        #expect(stillOld.isEmpty, "\(stillOld.count) of the assembled chunk files keep their old bytes")
        try vault.lock()
        try checkStorageInvariants(storage)
    }

    /// A delete followed by a lock: the lock writes the root once more, so that both slots hold
    /// it, and refills at once. The forensic coercer finds the deleted content before the lock
    /// and not after it.
    @Test func lockRefillsWhatTheLastCommitFreed() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, format: .one)
        try vault.makeFile("big", ForensicRecoveryTests.marked(7, count: 5 * Self.payload))
        try vault.commit()
        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.commit()
        let generation = vault.generation
        func found() throws -> Bool {
            try Coercer(files: storage.snapshot, patternKey: [UInt8](repeating: 1, count: 32)).recover().plaintexts
                .contains { $0.contains(ForensicRecoveryTests.marked(7, count: 40)) }
        }
        #expect(try found(), "the other slot's root still lists the freed files")
        try vault.lock()
        #expect(try !found(), "refilled at lock")

        let again = try TestVaults.open(storage, readOnly: true, format: .one)
        #expect(again.generation == generation + 1)
        #expect(try again.tree().isEmpty)
        try again.lock()
        try checkStorageInvariants(storage)
    }

    /// Opening, reading and locking writes nothing, refills included.
    @Test func aSessionThatChangesNothingRefillsNothing() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, format: .one)
        _ = try Self.chunkFiles(vault, storage)
        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.makeFile("small", [1, 2, 3])
        try vault.lock()
        let before = storage.snapshot
        let again = try TestVaults.open(storage, format: .one)
        #expect(try again.readAll("small") == [1, 2, 3])
        try again.lock()
        let diff = SnapshotDiff(before, storage.snapshot)
        #expect(diff.written.isEmpty && diff.removed.isEmpty)
    }

    /// The cost of item 3, on disk: deleting a 64 MiB file (256 chunk files) and committing
    /// twice. Groups left wholly free are removed (released), the rest of the freed files are
    /// refilled by the second commit. Prints the figures (docs/PERFORMANCE.md quotes them).
    @Test func refillCostOnDisk() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dotsafe-test-refill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try Storage.initialize(at: folder.path, random: SystemRandom())
        let storage = try Storage.open(at: folder.path)
        let vault = try TestVaults.open(storage, cacheBytes: 64 << 20, format: .one)
        let chunk = TestVaults.content(Self.payload, seed: 5)
        let id = try vault.create(.file, in: Vault.rootID, named: Array("big".utf8), mode: 0o644)
        for i in 0..<256 { try vault.write(id, offset: UInt64(i * Self.payload), bytes: chunk) }
        try vault.commit()
        try vault.remove(Array("big".utf8), from: Vault.rootID)
        let start1 = ContinuousClock.now
        try vault.commit()
        let deleteCommit = ContinuousClock.now - start1
        let before = vault.statistics.refilledFiles
        try vault.setAttributes(Vault.rootID, mtime: 9)
        let start2 = ContinuousClock.now
        try vault.commit()
        let refillCommit = ContinuousClock.now - start2
        let refilled = vault.statistics.refilledFiles - before
        #expect(refilled > 0)
        let files = try storage.listFiles().count
        print("refill cost: commit after deleting 64 MiB \(deleteCommit); next commit, refilling \(refilled) files (\(refilled * Format.fileSize) bytes) \(refillCommit); \(files) storage files left")
        try vault.lock()
    }
}
