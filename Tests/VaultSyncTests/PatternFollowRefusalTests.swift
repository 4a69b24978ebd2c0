import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// Two conditions of a follow (FORMAT.md §13.12, "Another device follows the change", condition
/// 3) about the number `n_new` that device 0 took for the new record, built through syncs: a
/// group of device 0 that the second device's table lacks, and a file that the second device's
/// state still references. Either way the new pattern's sync is refused as a join into a storage
/// under another pattern: every byte of the storage as it was, the old pattern opening its state.
@Suite(.serialized) struct PatternFollowRefusalTests {
    /// The first device (device 0) made a group after the second's last whole sync, whose files
    /// the second's next sync placed before it was killed, short of its commit: they are here,
    /// the group is not in the second's table. The first then takes the record's number there.
    @Test func aRecordNumberInAGroupTheOtherTableLacksIsRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)  // the first device learns of the second
        try second.write("offline.txt", "not synced yet")
        // Data takes every free file but the reserve, then a group is made (FileWriter.reservedFiles).
        try Self.writeInOneCommit(first, "big.bin", chunks: max(Self.free(first).count - FileWriter.reservedFiles + 1, 1))
        try first.sync(remote)
        let known = Self.groups(second)
        let made = Self.groups(first).subtracting(known)
        try #require(!made.isEmpty, "the first device made a group")

        let tree = try second.tree()
        try Self.killBeforeCommit(second, remote) { !Self.groups($0).isDisjoint(with: made) }
        #expect(try second.tree() == tree, "the killed sync committed nothing")
        #expect(Self.groups(second) == known)
        try Self.takeFreeFilesBelow(first, group: try #require(made.min()))
        try first.changePattern(to: 8)
        try first.sync(remote)
        let record = try Self.recordNumber(first)
        try #require(made.contains(record / UInt64(Format.groupSize)), "n_new \(record) lies in a group made since: \(made)")
        let name = try first.vault.state.withLock { try $0.name(record) }
        try #require(FileManager.default.fileExists(atPath: second.folder + "/" + name), "the killed sync placed D(n_new)")

        try Self.expectRefused(second, remote, tree: tree)
    }

    /// The first device deleted z.bin after the second synced it, and took one of its files for
    /// the record once its syncs freed them: the second's state still reads z there.
    @Test func aRecordNumberTheOtherStateStillReferencesIsRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)  // the first device learns of the second
        try Self.writeInOneCommit(first, "z.bin", chunks: 8)
        let zFiles = Set(try KeptOverDeleteSyncTests.chunkFiles(first, "z.bin").values)
        try first.sync(remote)
        try second.sync(remote)
        try second.write("offline.txt", "not synced yet")
        try first.vault.remove(Array("z.bin".utf8), from: Vault.rootID)
        try first.vault.commit()
        try first.sync(remote)
        try first.sync(remote)  // reads its root back: z's files are no longer pinned
        try #require(zFiles.isSubset(of: Set(Self.free(first))), "z's files are free on the first device")
        // z's chunks need not have taken consecutive numbers, and files freed since may lie
        // between them: from the first z file after which every free file up to z's last is
        // z's, the record lands on one of them.
        let free = Self.free(first), last = try #require(zFiles.max())
        let start = try #require(zFiles.sorted().first { z in free.allSatisfy { $0 < z || $0 > last || zFiles.contains($0) } })
        try Self.takeFreeFilesBelow(first, number: start)
        try first.changePattern(to: 8)
        try first.sync(remote)
        let record = try Self.recordNumber(first)
        try #require(zFiles.contains(record), "n_new \(record) is one of z's files \(zFiles.sorted())")
        let zBytes = try KeptOverDeleteSyncTests.contents(second, "z.bin")
        #expect(second.vault.state.withLock { $0.referencedFiles().contains { $0.file == record } }, "the second's state reads it")

        let tree = try second.tree()
        try Self.expectRefused(second, remote, tree: tree)
        let old = try Vault.open(storage: try Storage.open(at: second.folder), secrets: try SyncDevice.secrets(SyncDevice.seed),
                                 options: Vault.Options(readOnly: true, cacheBytes: 8 << 20))
        defer { try? old.lock() }
        let z = try old.lookup(Vault.rootID, Array("z.bin".utf8))
        #expect(try old.read(z, offset: 0, count: zBytes.count) == zBytes, "z reads as before with the old pattern")
    }

    /// The new pattern's sync into `device`'s storage is refused as a storage under another
    /// pattern; no byte of it changes, and the old pattern still opens `tree` there.
    static func expectRefused(_ device: SyncDevice, _ remote: TestRemote, tree: [String: String]) throws {
        try device.usePattern(8)
        let contents = try RemoteRollbackTests.contents(device.folder)
        #expect(throws: SyncRefusal.heldUnderOtherPattern) { try device.sync(remote) }
        #expect(try RemoteRollbackTests.contents(device.folder) == contents, "no file of the storage changed")
        #expect(try PatternFollowTests.view(device.folder, seed: SyncDevice.seed) == tree, "the old pattern opens the state as it was")
    }

    /// The groups device 0's entry lists in `device`'s committed table.
    static func groups(_ device: SyncDevice) -> Set<UInt64> {
        device.vault.state.withLock { state in
            Set((state.committer.formatTwo?.devices.first?.ownedGroups ?? []).flatMap { Array($0.first..<$0.end) })
        }
    }

    static func free(_ device: SyncDevice) -> [UInt64] { device.vault.state.withLock { $0.writer.allocator.freeNumbers } }

    /// The number the committed root lists for the owner's record (device 0's: raw = number).
    static func recordNumber(_ device: SyncDevice) throws -> UInt64 {
        try device.vault.state.withLock { state in
            try #require(state.committer.formatTwo?.specialFiles.first { $0.role == .ownerUnlock }).file.raw
        }
    }

    /// A new file of `chunks` chunks, written and committed at once: its chunks take the lowest
    /// free files, the commit's pages the next ones.
    static func writeInOneCommit(_ device: SyncDevice, _ name: String, chunks: Int) throws {
        let id = try device.vault.create(.file, in: Vault.rootID, named: Array(name.utf8), mode: 0o644)
        try device.vault.write(id, offset: 0, bytes: KeptOverDeleteSyncTests.bytes(UInt8(truncatingIfNeeded: chunks), chunks: chunks))
        try device.vault.commit()
    }

    /// Right after a sync (the pages are pinned: a commit frees none), the free files below
    /// `number` (or `group`'s first) taken by a file's chunks: the lowest free file is then
    /// `number`'s or above.
    static func takeFreeFilesBelow(_ device: SyncDevice, number: UInt64? = nil, group: UInt64? = nil) throws {
        let limit = number ?? group! * UInt64(Format.groupSize)
        let below = free(device).prefix { $0 < limit }.count
        if below > 0 { try writeInOneCommit(device, "fill.bin", chunks: below) }
        #expect(free(device).first.map { $0 >= limit } ?? false, "lowest free \(String(describing: free(device).first)), limit \(limit)")
    }

    /// `device`'s next sync, killed at the last storage mutation before its commit point
    /// (`committed` tells whether the storage's state has it), the remote left as it was.
    static func killBeforeCommit(_ device: SyncDevice, _ remote: TestRemote, committed: (SyncDevice) throws -> Bool) throws {
        let start = try device.snapshot()
        let putBack = try RemoteRollbackTests.copy(of: remote)
        func run(cutAt cut: Int?) throws -> Bool {
            try device.restore(from: start)
            try putBack()
            let storage = CutStorageFolder(try Storage.open(at: device.folder), cutAt: cut)
            do { try device.sync(remote, storage: storage) { _ in } } catch {}
            return try committed(device)
        }
        // The largest cut that leaves the commit out: before it the state is the old one.
        try device.restore(from: start)
        var low = 0, high = try StorageCount.countedSync(device, remote).mutations
        try #require(try committed(device), "whole, the sync commits")
        while high - low > 1 {
            let middle = (low + high) / 2
            if try run(cutAt: middle) { high = middle } else { low = middle }
        }
        #expect(try !run(cutAt: low))
        try putBack()
    }
}
