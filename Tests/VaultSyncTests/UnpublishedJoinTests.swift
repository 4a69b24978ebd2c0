import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// A first sync (a join) that committed here and never got its root up, then another device
/// wrote (docs/FORMAT.md §13.12, "A join committed, never published"; ADVERSARIES.md: the crash,
/// a concurrent device). Its root lost the race (`raced`): the next sync takes this device into
/// the remote's table and merges, both devices' writes reach both. Its index taken by another
/// device's join meanwhile: still refused in its one line, nothing changed on either side (the
/// entry cannot go at the end without renaming every file of its own). Real vaults on disk, a
/// real rclone, a local remote.
@Suite(.serialized) struct UnpublishedJoinTests {
    typealias Files = SharedSyncTests

    @Test func aJoinWhoseRootLostTheRaceMergesAtItsNextSync() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let owner = try SyncedPatternChangeTests.syncedLaptop(remote)
        let joiner = try SyncDevice("desktop")
        defer { owner.finish(); joiner.finish() }
        // The owner syncs while the join uploads: the join's root does not go up.
        var raced = false
        let line = Files.refusal {
            try joiner.sync(remote) { change in
                guard change == "upload", !raced else { return }
                raced = true
                try owner.write("during.txt", "written while the desktop joined")
                try owner.vault.remove(Array("file-2.txt".utf8), from: Vault.rootID)
                try owner.reopen()
                try owner.sync(remote)
            }
        }
        #expect(line == SyncRefusal.raced.description, "\(line)")
        try #require(!joiner.vault.isNew, "the join committed here")

        try joiner.write("from-desktop.txt", "the desktop's")
        try joiner.reopen()
        let joined = try StorageCount.countedSync(joiner, remote)
        #expect(StorageCount.uneven(joined).isEmpty, "\(StorageCount.uneven(joined))")
        try owner.sync(remote)
        #expect(try owner.read("from-desktop.txt") == "the desktop's")
        #expect(try joiner.tree() == owner.tree())
        #expect(try joiner.tree()["file-2.txt"] == nil && joiner.read("during.txt") == "written while the desktop joined")
        let report = try joiner.vault.check(), files = try StorageCount.files(joiner.folder)
        #expect(report.isClean, "\(report.damagedItems) \(report.storageProblems)")
        #expect(files % Format.groupSize == 0, "\(files) files")
        // Both go on: the owner's next write reaches the desktop.
        try owner.write("after.txt", "after")
        try owner.reopen()
        try owner.sync(remote)
        try joiner.sync(remote)
        #expect(try joiner.read("after.txt") == "after")
    }

    @Test func aJoinKilledBeforeItsUploadWhoseIndexAnotherJoinTookIsRefused() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let owner = try SyncedPatternChangeTests.syncedLaptop(remote)
        let joiner = try SyncDevice("desktop"), other = try SyncDevice("tablet")
        defer { owner.finish(); joiner.finish(); other.finish() }
        let killed = Files.refusal { try joiner.sync(remote, stoppingAt: "upload") }
        #expect(killed == "\(SyncDevice.Stop())", "\(killed)")
        try #require(!joiner.vault.isNew, "the join committed here")
        try other.sync(remote)
        try owner.write("later.txt", "later")
        try owner.reopen()
        try owner.sync(remote)

        // (The refusal comes at the merge, after the remote's pages came down: one of another
        // device's files that this vault does not reference may hold the remote's bytes since.)
        let namesBefore = Set(try Files.files(joiner.folder).keys), remoteBefore = try Files.files(served), tree = try joiner.tree()
        for attempt in 1...2 {
            let line = Files.refusal { try joiner.sync(remote) }
            joiner.reopenAfterCrash()
            #expect(line == SyncRefusal.unknownDevice.description, "\(attempt): \(line)")
            #expect(Set(try Files.files(joiner.folder).keys) == namesBefore, "sync \(attempt) added or removed a file here")
            #expect(try Files.files(served) == remoteBefore, "sync \(attempt) changed the remote")
            let report = try joiner.vault.check()
            #expect(try joiner.tree() == tree && report.isClean, "\(attempt): \(report.damagedItems) \(report.storageProblems)")
        }
        // The tablet's entry and files are untouched: it syncs on with the owner.
        try other.sync(remote)
        #expect(try other.read("later.txt") == "later")
    }
}
