import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// Another device follows a pattern change in place (FORMAT.md §13.12, "Another device follows
/// the change"): the first device (device 0) changes the pattern to seed 8 and syncs; the second,
/// which wrote offline under the old pattern, syncs the new pattern into its own storage, which
/// takes its state under the new pattern, merges and publishes it. Cut anywhere, one of the two
/// patterns opens the second device's whole state, and the next sync ends in it. What is still
/// refused is refused with every byte of the storage as it was. Real storages, a real rclone.
@Suite(.serialized) struct PatternFollowTests {
    /// Two devices of a vault; the second writes offline, the first writes, changes the pattern
    /// to seed 8, writes again and syncs.
    static func changedElsewhere(_ remote: TestRemote) throws -> (first: SyncDevice, second: SyncDevice) {
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        try first.sync(remote)  // the first device learns of the second
        try second.write("offline.txt", "not synced yet")
        try first.write("before.txt", "written before the change")
        try first.changePattern(to: 8)
        try first.write("after.txt", "written after the change")
        try first.sync(remote)
        return (first, second)
    }

    /// The tree a read-only open with the pattern of `seed` finds in `folder`; nil: nothing
    /// there (a new, empty vault).
    static func view(_ folder: String, seed: UInt8) throws -> [String: String]? {
        let vault = try Vault.open(storage: try Storage.open(at: folder), secrets: try SyncDevice.secrets(seed),
                                   options: Vault.Options(readOnly: true, cacheBytes: 8 << 20))
        defer { try? vault.lock() }
        return vault.isNew ? nil : try SyncDevice.tree(of: vault)
    }

    /// After the follow the old pattern names nothing of the storage: it opens a new, empty vault.
    static func expectOldPatternOpensNothing(_ device: SyncDevice, _ place: String = "") throws {
        #expect(try Vault.patternUse(try SyncDevice.secrets(SyncDevice.seed), in: try Storage.open(at: device.folder)) == Vault.PatternUse.none,
                "\(place)")
        #expect(try view(device.folder, seed: SyncDevice.seed) == nil, "\(place)")
    }

    @Test(arguments: [false, true])
    func theNewPatternSyncedIntoTheOldPatternsStorageFollowsTheChange(mounted: Bool) throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let (first, second) = try Self.changedElsewhere(remote)
        defer { first.finish(); second.finish() }

        try second.usePattern(8)
        try second.sync(remote, mounted: mounted)
        #expect(try second.read("offline.txt") == "not synced yet")
        #expect(try second.read("after.txt") == "written after the change")
        #expect(try second.read("before.txt") == "written before the change")
        try first.sync(remote)
        #expect(try first.read("offline.txt") == "not synced yet")
        #expect(try first.tree() == second.tree())
        for device in [first, second] {
            let report = try device.vault.check()
            #expect(report.isClean, "\(device.name): \(report.damagedItems) \(report.storageProblems) \(report.indexProblems)")
            #expect(try StorageCount.files(device.folder) % Format.groupSize == 0, "\(device.name)")
        }
        #expect(try SyncedPatternChangeTests.remoteNames(remote).filter(FileName.isWellFormed).count % Format.groupSize == 0)
        try Self.expectOldPatternOpensNothing(second)
        // And it goes on syncing as any device.
        try second.write("later.txt", "later")
        try second.sync(remote, mounted: mounted)
        try first.sync(remote)
        #expect(try first.read("later.txt") == "later")
    }

    /// The same file changed on both: the follow merges as any sync, the second device's version
    /// in a conflict copy.
    @Test func aFileChangedOnBothSidesKeepsBoth() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)
        try second.write("notes.txt", "the second's version")
        try first.write("notes.txt", "the first's version")
        try first.changePattern(to: 8)
        try first.sync(remote)

        try second.usePattern(8)
        let summary = try second.sync(remote)
        #expect(summary.conflicts == 1, "\(summary.actions)")
        try first.sync(remote)
        try VaultSyncTests.expectBothVersionsKept(first, second)
        #expect(try first.tree() == second.tree())
    }

    /// The follow cut at each of its storage mutations (a process killed there): the new pattern
    /// opens the second device's state, or nothing and the old pattern opens it; fsck is clean,
    /// the count in steps of 16; the next sync with the new pattern ends in the merged state,
    /// and the old pattern opens nothing there.
    @Test func aFollowKilledAtAnyMutationLosesNothing() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try Self.changedElsewhere(remote)
        defer { first.finish(); second.finish() }
        let own = try second.tree()
        try second.usePattern(8)
        let victim = try second.snapshot()
        let remoteCopy = remote.path + "-copy"
        try FileManager.default.copyItem(atPath: remote.path, toPath: remoteCopy)
        defer { try? FileManager.default.removeItem(atPath: remoteCopy) }

        // The follow's mutations: up to the sync's first step after it.
        var followed = 0
        let counting = try StorageCount.countedSync(second, remote) { change, mutations in
            if change == "follow finished" { followed = mutations }
        }
        #expect(StorageCount.uneven(counting).isEmpty, "\(StorageCount.uneven(counting))")
        let expected = try second.tree()
        #expect(expected["offline.txt"] == "not synced yet" && expected["after.txt"] == "written after the change")
        #expect(followed > 0 && counting.done.prefix(followed).contains("rename"), "the follow's renames: \(counting.done.prefix(followed))")

        var failures: [String] = []
        for cut in 0...(followed + 2) {
            try second.restore(from: victim)
            try SyncDevice.copyFiles(from: remoteCopy, to: remote.path)
            let storage = CutStorageFolder(try Storage.open(at: second.folder), cutAt: cut)
            do { try second.sync(remote, storage: storage) { _ in } } catch {}
            let place = "cut before mutation \(cut) (after \(storage.done.suffix(2)))"
            let viaNew = try Self.view(second.folder, seed: 8), viaOld = try Self.view(second.folder, seed: SyncDevice.seed)
            if viaNew != own && viaNew != expected && viaOld != own { failures.append("\(place): new \(viaNew.map { "\($0.keys.sorted())" } ?? "nothing"), old \(viaOld.map { "\($0.keys.sorted())" } ?? "nothing")") }
            if try StorageCount.files(second.folder) % Format.groupSize != 0 { failures.append("\(place): \(try StorageCount.files(second.folder)) files") }
            try second.sync(remote)
            let report = try second.vault.check()
            if try second.tree() != expected || !report.isClean {
                failures.append("\(place), then a sync: \(report.damagedItems) \(report.storageProblems) \(report.indexProblems)")
            }
            try Self.expectOldPatternOpensNothing(second, place)
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "; "))")
        try first.sync(remote)
        #expect(try first.tree() == expected)
    }

    /// Still refused, every byte of the storage as it was: a storage whose own root is the first
    /// device's (a copy of the changer's storage from before the change, which must not take
    /// the record again), and the new pattern while the change's sync is half done on the remote.
    @Test func aCopyOfTheChangersStorageIsStillRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)
        let backup = try first.snapshot()
        try first.changePattern(to: 8)
        try first.sync(remote)
        // The backup put in the second device's place: its root is device 0's.
        try second.restore(from: backup)
        try second.usePattern(8)
        let contents = try RemoteRollbackTests.contents(second.folder)
        #expect(throws: SyncRefusal.heldUnderOtherPattern) { try second.sync(remote) }
        #expect(try RemoteRollbackTests.contents(second.folder) == contents, "no file of the storage changed")
        #expect(try Self.view(second.folder, seed: SyncDevice.seed) != nil, "the old pattern still opens it")
    }

    /// A share made on the second device since its last sync: its grant's recipient is in its
    /// old record only, which the new pattern cannot read, and not in the remote's record that
    /// the new record would take its tags from.
    @Test func aShareMadeHereSinceTheLastSyncIsStillRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)
        let carol = try SyncDevice("carol", seed: 0xC3)
        defer { carol.finish() }
        try second.vault.share(with: try carol.vault.contactCode().code)
        try second.reopen()
        try first.changePattern(to: 8)
        try first.sync(remote)
        let tree = try second.tree()
        try second.usePattern(8)
        let contents = try RemoteRollbackTests.contents(second.folder)
        #expect(throws: SyncRefusal.heldUnderOtherPattern) { try second.sync(remote) }
        #expect(try RemoteRollbackTests.contents(second.folder) == contents, "no file of the storage changed")
        #expect(try Self.view(second.folder, seed: SyncDevice.seed) == tree, "the old pattern still opens it")
    }

    @Test func aChangeWhoseSyncIsHalfDoneOnTheRemoteIsStillRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)
        try second.write("offline.txt", "not synced yet")
        try first.changePattern(to: 8)
        // The new record is up, the root that lists it not yet.
        #expect(throws: SyncDevice.Stop.self) { try first.sync(remote, stoppingAt: "root") }
        try second.usePattern(8)
        let contents = try RemoteRollbackTests.contents(second.folder)
        let remoteContents = try RemoteRollbackTests.contents(try #require(remote.servedFolder))
        #expect(throws: SyncRefusal.heldUnderOtherPattern) { try second.sync(remote) }
        #expect(try RemoteRollbackTests.contents(second.folder) == contents, "no file of the storage changed")
        #expect(try RemoteRollbackTests.contents(try #require(remote.servedFolder)) == remoteContents, "nor of the remote")
        // Once the first device's next sync finishes the change, the second follows it.
        try first.sync(remote)
        try second.sync(remote)
        #expect(try second.read("offline.txt") == "not synced yet")
        try Self.expectOldPatternOpensNothing(second)
    }
}
